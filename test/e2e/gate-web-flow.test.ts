import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchHeadlessChromium } from "../harness/headless-browser.ts";
import { startTestMesh, type TestMesh } from "../harness/test-mesh.ts";
import { newGate, newPartner, partnerApi, result, verifyIndependently } from "./gate-support.ts";

/**
 * The web flow in a real browser: headless Chromium opens the web_url, creates a passkey with the
 * DevTools virtual authenticator (private mode: no personal data), confirms with it, and returns to
 * the partner's return_url with a token that verifies independently against the served key set.
 */
describe("the web flow in a browser", () => {
  let mesh: TestMesh;
  let browser: Browser;
  const returned: URL[] = [];
  const back = createServer((req, res) => {
    returned.push(new URL(req.url ?? "/", "http://127.0.0.1"));
    res.writeHead(200, { "content-type": "text/plain" }).end("back at the partner");
  });

  beforeAll(async () => {
    await new Promise<void>((resolve) => back.listen(0, "127.0.0.1", resolve));
    mesh = await startTestMesh("gate_web", { only: ["signing", "account", "gate"] });
    // Browsers refuse IP addresses as WebAuthn relying parties: the page is served as localhost.
    const port = new URL(mesh.gatewayUrl).port;
    await mesh.restart("gateway", { GATEWAY_PUBLIC_ORIGIN: `http://localhost:${port}` });
    browser = await launchHeadlessChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await mesh?.stop();
    back.close();
  });

  it("creates a passkey, confirms, and returns to return_url with a verifiable token", async () => {
    const api = partnerApi(mesh);
    const partner = await newPartner(mesh, "Web shop");
    await newGate(mesh, partner.organizationId, { key: "web" });
    const grant = result(
      await api.post("/sdk/create-session", { partner_user_id: "web-user" }, partner.devSecret),
    ).anchor_grant_token;
    const returnUrl = `http://127.0.0.1:${(back.address() as AddressInfo).port}/back`;
    const link = result(await api.post("/sdk/create-verification-link", { gate: "web", return_url: returnUrl }, grant));
    expect(link.web_url).toMatch(/^http:\/\/localhost:\d+\/flow\/req_[0-9a-f]{32}#t=/);

    const context = await browser.newContext();
    const page = await context.newPage();
    const cdp = await context.newCDPSession(page);
    await cdp.send("WebAuthn.enable");
    await cdp.send("WebAuthn.addVirtualAuthenticator", {
      options: {
        protocol: "ctap2",
        transport: "internal",
        hasResidentKey: true,
        hasUserVerification: true,
        isUserVerified: true,
        automaticPresenceSimulation: true,
      },
    });

    await page.goto(link.web_url);
    await page.getByText("Confirm with a passkey on this device").waitFor();
    await page.getByRole("button", { name: "Create a passkey" }).click();
    await page.getByText("Passkey created").waitFor();
    await page.getByRole("button", { name: "Continue with a passkey" }).click();
    await page.waitForURL((url) => url.toString().startsWith(returnUrl), { timeout: 15_000 });
    await context.close();

    // The browser may also ask the partner's server for a favicon.
    const landed = returned.find((url) => url.pathname === "/back")!;
    expect(landed.searchParams.get("request_id")).toBe(link.request_id);
    expect(landed.searchParams.get("status")).toBe("completed");
    const token = landed.searchParams.get("token")!;
    const claims = await verifyIndependently(mesh, token, new Date());
    expect(claims).toMatchObject({
      request_id: link.request_id,
      verified: true,
      organization_id: partner.organizationId,
      trusted: false,
    });
    const record = result(
      await api.get("/verification/status", { request_id: link.request_id }, partner.devSecret),
      true,
    );
    expect(record).toMatchObject({ status: "completed", token });
  });
});
