import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import type { Browser, BrowserContext } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchHeadlessChromium } from "../harness/headless-browser.ts";
import { startTestMesh, type TestMesh } from "../harness/test-mesh.ts";
import { newGate, newPartner, partnerApi, result } from "./gate-support.ts";
import { type PartnerEndpoint, startPartnerEndpoint } from "./partner-endpoint.ts";
import { phoneViewport, signInAsNewPerson } from "./web-app-support.ts";

/**
 * A device that cannot verify the person (no screen lock or biometric), in headless Chromium: the
 * passkey is created on the DevTools virtual authenticator while it verifies the user, then moves to
 * one without user verification, as when the screen lock is removed later. Confirming then fails the
 * request with device_lock_required, from the web app's request screen and from the web flow, and the
 * partner reads the failure in the status record and the signed gate.unavailable webhook. A prompt
 * refused on a device that can verify the person stays a dismissed prompt; Cancel is user_denied, and a
 * browser without WebAuthn is platform_declined.
 */
describe("device_lock_required in a browser", () => {
  let mesh: TestMesh;
  let browser: Browser;
  let origin: string;
  let api: ReturnType<typeof partnerApi>;
  let partner: Awaited<ReturnType<typeof newPartner>>;
  let endpoint: PartnerEndpoint;
  const returned: URL[] = [];
  const back = createServer((req, res) => {
    returned.push(new URL(req.url ?? "/", "http://127.0.0.1"));
    res.writeHead(200, { "content-type": "text/plain" }).end("back at the partner");
  });

  beforeAll(async () => {
    await new Promise<void>((resolve) => back.listen(0, "127.0.0.1", resolve));
    mesh = await startTestMesh("device_lock");
    // Browsers refuse IP addresses as WebAuthn relying parties: the pages are served as localhost.
    origin = `http://localhost:${new URL(mesh.gatewayUrl).port}`;
    await mesh.restart("gateway", { GATEWAY_PUBLIC_ORIGIN: origin });
    api = partnerApi(mesh);
    partner = await newPartner(mesh, "Locked phones");
    endpoint = await startPartnerEndpoint(mesh, partner.organizationId);
    await newGate(mesh, partner.organizationId, { key: "door" });
    browser = await launchHeadlessChromium();
  }, 180_000);
  afterAll(async () => {
    await browser?.close();
    await mesh?.stop();
    endpoint?.close();
    back.close();
  });

  const verifying = { hasUserVerification: true, isUserVerified: true };
  /** An authenticator that verifies the person, but whose person does not pass (the prompt is refused). */
  const refusing = { hasUserVerification: true, isUserVerified: false };
  const withoutLock = { hasUserVerification: false, isUserVerified: false };

  /**
   * A page with a platform passkey authenticator that verifies the user; `replace` moves its passkeys to
   * an authenticator with other user verification, so the browser reports that one from then on.
   */
  async function deviceIn(context: BrowserContext) {
    const page = await context.newPage();
    const cdp = await context.newCDPSession(page);
    await cdp.send("WebAuthn.enable");
    const add = async (verification: typeof verifying) =>
      (
        await cdp.send("WebAuthn.addVirtualAuthenticator", {
          options: {
            protocol: "ctap2",
            transport: "internal",
            hasResidentKey: true,
            automaticPresenceSimulation: true,
            ...verification,
          },
        })
      ).authenticatorId;
    let authenticatorId = await add(verifying);
    const replace = async (verification: typeof verifying) => {
      const { credentials } = await cdp.send("WebAuthn.getCredentials", { authenticatorId });
      expect(credentials).toHaveLength(1);
      await cdp.send("WebAuthn.removeVirtualAuthenticator", { authenticatorId });
      authenticatorId = await add(verification);
      for (const credential of credentials) await cdp.send("WebAuthn.addCredential", { authenticatorId, credential });
    };
    return { page, replace };
  }

  const createLink = async (body: Record<string, unknown>) => {
    const grant = result(await api.post("/sdk/create-session", {}, partner.devSecret)).anchor_grant_token;
    return result(await api.post("/sdk/create-verification-link", { gate: "door", ...body }, grant));
  };
  const status = async (requestId: string) =>
    result(await api.get("/verification/status", { request_id: requestId }, partner.devSecret), true);
  const unavailable = async (requestId: string) =>
    (
      await endpoint.waitFor(
        (b) => b.request_id === requestId && b.type === "gate.unavailable",
        `gate.unavailable for ${requestId}`,
      )
    ).body;
  /** What the partner reads of a failed request: the status record, and the webhook's reason. */
  async function expectFailedWith(requestId: string, reason: string) {
    expect(await status(requestId)).toMatchObject({ found: true, status: "failed", reason: "unavailable" });
    const event = await unavailable(requestId);
    expect(event).toMatchObject({
      type: "gate.unavailable",
      request_id: requestId,
      verdict: "unavailable",
      reason,
      failed_at: expect.any(String),
    });
    expect(event.failure_code).toBeUndefined();
    expect(endpoint.deliveries().filter((d) => d.body.request_id === requestId)).toHaveLength(1);
  }

  /** The web app signed in as a new person with a passkey made while the device verified them. */
  async function appPerson(context: BrowserContext) {
    const device = await deviceIn(context);
    const session = await signInAsNewPerson(device.page, origin);
    const svcUserId = result(await api.get("/app/me", {}, session)).svc_user_id as string;
    await device.page.getByRole("link", { name: "Passkeys" }).click();
    await device.page.getByRole("button", { name: "Create a passkey" }).click();
    await device.page.getByText("Passkey created.").waitFor();
    return { ...device, svcUserId };
  }

  it("the web app's request screen: a device without a screen lock fails the request with device_lock_required", async () => {
    const context = await browser.newContext({ viewport: phoneViewport });
    const { page, replace, svcUserId } = await appPerson(context);
    await replace(withoutLock);
    expect(await page.evaluate(() => PublicKeyCredential.isUserVerifyingPlatformAuthenticatorAvailable())).toBe(false);

    const link = await createLink({ svc_user_id: svcUserId });
    await page.goto(`${origin}/app/requests/${link.request_id}`);
    await page.getByRole("button", { name: "Confirm with a passkey" }).click();
    await page
      .getByRole("status")
      .filter({ hasText: "This device has no screen lock or biometric set up" })
      .filter({ hasText: "This request is failed." })
      .waitFor();
    expect(await page.getByRole("button", { name: "Confirm with a passkey" }).isVisible()).toBe(false);
    await expectFailedWith(link.request_id, "device_lock_required");
    await context.close();
  });

  it("the web app's request screen: a refused prompt on a device that verifies stays pending; Decline is user_denied", async () => {
    const context = await browser.newContext({ viewport: phoneViewport });
    const { page, replace, svcUserId } = await appPerson(context);
    await replace(refusing);
    expect(await page.evaluate(() => PublicKeyCredential.isUserVerifyingPlatformAuthenticatorAvailable())).toBe(true);

    const link = await createLink({ svc_user_id: svcUserId });
    await page.goto(`${origin}/app/requests/${link.request_id}`);
    await page.getByRole("button", { name: "Confirm with a passkey" }).click();
    await page.getByText("The passkey prompt was dismissed. Try again.").waitFor();
    expect((await status(link.request_id)).status).toBe("pending");
    await page.getByRole("button", { name: "Decline" }).click();
    await page.getByText("This request is failed.").waitFor();
    await expectFailedWith(link.request_id, "user_denied");
    await context.close();
  });

  describe("the web flow", () => {
    const returnUrl = () => `http://127.0.0.1:${(back.address() as AddressInfo).port}/back`;
    const landedFor = (requestId: string) =>
      returned.find((url) => url.pathname === "/back" && url.searchParams.get("request_id") === requestId);

    /** The web flow with a passkey created on it while the device verified the person. */
    async function flowWithPasskey(context: BrowserContext) {
      const device = await deviceIn(context);
      const link = await createLink({ return_url: returnUrl() });
      await device.page.goto(link.web_url);
      await device.page.getByRole("button", { name: "Create a passkey" }).click();
      await device.page.getByText("Passkey created").waitFor();
      return { ...device, link };
    }

    it("a device without a screen lock fails the request with device_lock_required and goes back to return_url", async () => {
      const context = await browser.newContext();
      const { page, replace, link } = await flowWithPasskey(context);
      await replace(withoutLock);
      await page.getByRole("button", { name: "Continue with a passkey" }).click();
      await page.waitForURL((url) => url.toString().startsWith(returnUrl()), { timeout: 15_000 });
      const landed = landedFor(link.request_id)!;
      expect(landed.searchParams.get("status")).toBe("failed");
      expect(landed.searchParams.get("token")).toBeNull();
      await expectFailedWith(link.request_id, "device_lock_required");
      await context.close();
    });

    it("a refused prompt on a device that verifies stays pending; Cancel is user_denied", async () => {
      const context = await browser.newContext();
      const { page, replace, link } = await flowWithPasskey(context);
      await replace(refusing);
      await page.getByRole("button", { name: "Continue with a passkey" }).click();
      await page.getByText("The passkey prompt was dismissed. Try again.").waitFor();
      expect((await status(link.request_id)).status).toBe("pending");
      await page.getByRole("button", { name: "Cancel" }).click();
      await page.waitForURL((url) => url.toString().startsWith(returnUrl()), { timeout: 15_000 });
      expect(landedFor(link.request_id)!.searchParams.get("status")).toBe("failed");
      await expectFailedWith(link.request_id, "user_denied");
      await context.close();
    });

    it("a browser without WebAuthn is platform_declined", async () => {
      const context = await browser.newContext();
      await context.addInitScript(() => {
        delete (window as { PublicKeyCredential?: unknown }).PublicKeyCredential;
      });
      const page = await context.newPage();
      const link = await createLink({});
      await page.goto(link.web_url);
      await page.getByText("This request is failed.").waitFor();
      await expectFailedWith(link.request_id, "platform_declined");
      await context.close();
    });
  });
});
