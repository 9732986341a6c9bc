import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchHeadlessChromium } from "../harness/headless-browser.ts";
import { runSvcctl } from "../harness/svcctl.ts";
import { startTestMesh, type TestMesh } from "../harness/test-mesh.ts";
import { dataError, newGate, newPartner, partnerApi, result } from "./gate-support.ts";

/**
 * The person's page of an Age Gate in Chromium through the QR path: the page shows the wallet's QR code,
 * the development wallet answers from "another device" (svcctl), a refusal is shown in plain words, and
 * after the honest answer the page moves on to the passkey by itself; the partner reads "over".
 */
describe("the Age Gate's web flow with a wallet on another device", () => {
  let mesh: TestMesh;
  let browser: Browser;

  beforeAll(async () => {
    mesh = await startTestMesh("age_web", { only: ["signing", "account", "gate"] });
    // Browsers refuse IP addresses as WebAuthn relying parties: the page is served as localhost.
    const origin = `http://localhost:${new URL(mesh.gatewayUrl).port}`;
    await mesh.restart("gateway", { GATEWAY_PUBLIC_ORIGIN: origin });
    await mesh.restart("account", { ACCOUNT_DEV_ISSUER: `${origin}/dev-idp` });
    browser = await launchHeadlessChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await mesh?.stop();
  });

  it("shows the QR code, a refusal with try again, then the passkey step; the status reads over", async () => {
    const api = partnerApi(mesh);
    const partner = await newPartner(mesh, "Adults only");
    await newGate(mesh, partner.organizationId, { key: "adults", age: 18 });
    const grant = result(await api.post("/sdk/create-session", {}, partner.devSecret)).anchor_grant_token;
    const link = result(await api.post("/sdk/create-verification-link", { gate: "adults" }, grant));
    const requestId = link.request_id as string;

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
    await page.getByText("Scan with your wallet app").waitFor();
    const qr = page.getByRole("img", { name: "QR code to scan with your wallet app" });
    expect(await qr.getAttribute("src")).toMatch(
      /^http:\/\/localhost:\d+\/wallet\/requests\/apr_[0-9a-f]{32}\/qr\.svg$/,
    );
    // The strict CSP lets the page load it: the image has its size.
    await page.waitForFunction(() => (document.getElementById("qr") as HTMLImageElement).naturalWidth > 0);
    expect(await page.getByRole("button", { name: "Continue with a passkey" }).isVisible()).toBe(false);

    const wallet = async (issuer: string) => {
      const run = await runSvcctl(mesh, [
        "wallet",
        "present",
        "--request",
        requestId,
        "--birthdate",
        "1990-01-01",
        "--issuer",
        issuer,
      ]);
      expect(run.code, run.stderr).toBe(0);
      return JSON.parse(run.stdout);
    };
    expect(await wallet("untrusted")).toEqual({ accepted: false, reason: "untrusted_issuer" });
    await page.getByText("comes from an issuer this service does not trust").waitFor({ timeout: 15_000 });
    await page.getByRole("button", { name: "Try again" }).click();
    expect(await page.getByRole("alert").isVisible()).toBe(false);

    expect(await wallet("development")).toEqual({ accepted: true });
    await page.getByText("Confirm with a passkey on this device").waitFor({ timeout: 15_000 });
    expect(await qr.isVisible()).toBe(false);
    await page.getByRole("button", { name: "Create a passkey" }).click();
    await page.getByText("Passkey created").waitFor();
    await page.getByRole("button", { name: "Continue with a passkey" }).click();
    await page.getByText("Done. You can close this page.").waitFor({ timeout: 15_000 });
    await context.close();

    const record = result(await api.get("/verification/status", { request_id: requestId }, partner.devSecret), true);
    expect(record).toMatchObject({ status: "completed", age_verdict: "over" });
  });

  it("refuses the presentation route without the flow secret", async () => {
    const api = partnerApi(mesh);
    const answer = await api.post("/flow/requests/presentation", {
      request_id: `req_${"0".repeat(32)}`,
      t: "wrong",
      presentation_id: `apr_${"0".repeat(32)}`,
    });
    expect(dataError(answer).statusCode).toBe(404);
  });
});
