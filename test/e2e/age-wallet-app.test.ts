import { createClient } from "@connectrpc/connect";
import { AccountConsoleService } from "@svc/proto/account/v1/account_pb.js";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { developmentDcApiAnswer, withDigitalCredentials } from "../harness/digital-credentials.ts";
import { launchHeadlessChromium } from "../harness/headless-browser.ts";
import { deviceResponse, mdocVpToken } from "../harness/mdoc-holder.ts";
import { runSvcctl } from "../harness/svcctl.ts";
import { startTestMesh, type TestMesh } from "../harness/test-mesh.ts";
import { credentialParts, jwtPayload, newHolder, presentation, vpToken } from "../harness/wallet-holder.ts";
import { dataError, newGate, newPartner, partnerApi, result, signedInPerson } from "./gate-support.ts";
import { pageWithAuthenticator, phoneViewport, reviewScreen, signInAsNewPerson } from "./web-app-support.ts";

/**
 * Proving one's age ahead of time from the app with a wallet on the same device, through the Digital
 * Credentials API (OpenID4VP 1.0 Appendix A): the app API's routes through the gateway, and the web app's
 * "prove your age" screen in Chromium, where an init script installs `DigitalCredential` and hands the
 * request to this process, whose development wallet (svcctl) answers. A later Age Gate at 18 then
 * finishes with the passkey alone.
 */
const birthDates = { 30: "1996-01-15", 15: "2011-01-15" } as const;
const euPidThresholds = ["12", "14", "16", "18", "21", "65"];

describe("proving one's age ahead of time from the app, with a wallet on this device", () => {
  let mesh: TestMesh;
  let browser: Browser;
  let api: ReturnType<typeof partnerApi>;
  let partner: Awaited<ReturnType<typeof newPartner>>;
  /** The gateway's public origin: the web app's, and the one a DC API answer is bound to. */
  let origin: string;

  beforeAll(async () => {
    mesh = await startTestMesh("age_app", { only: ["signing", "account", "gate"] });
    // Browsers refuse IP addresses as WebAuthn relying parties: the app is served as localhost.
    origin = `http://localhost:${new URL(mesh.gatewayUrl).port}`;
    await mesh.restart("gateway", { GATEWAY_PUBLIC_ORIGIN: origin });
    api = partnerApi(mesh);
    partner = await newPartner(mesh, "Adults only");
    await newGate(mesh, partner.organizationId, { key: "adults", age: 18 });
    browser = await launchHeadlessChromium();
  }, 180_000);
  afterAll(async () => {
    await browser?.close();
    await mesh?.stop();
  });

  const person = () => signedInPerson(mesh, origin);
  type Person = Awaited<ReturnType<typeof person>>;

  /** A later Age Gate at 18 naming the person, opened and confirmed in the app: what it asked and what the partner reads. */
  async function laterAgeGate(who: Person) {
    const grant = result(await api.post("/sdk/create-session", {}, partner.devSecret)).anchor_grant_token;
    const link = result(
      await api.post("/sdk/create-verification-link", { gate: "adults", svc_user_id: who.svcUserId }, grant),
    );
    const opened = result(await who.app("/requests/open", { request_id: link.request_id, origin }));
    const confirmed = result(
      await who.app("/requests/confirm", {
        request_id: link.request_id,
        ceremony_id: opened.ceremony_id,
        response: who.authenticator.assert(opened.options, origin),
      }),
    );
    const record = result(
      await api.get("/verification/status", { request_id: link.request_id }, partner.devSecret),
      true,
    );
    return { presentationStep: opened.age_presentation, status: confirmed.status, verdict: record.age_verdict };
  }

  /** Starts an ahead-of-time proof and asks for its DC API request. */
  async function dcApiRequest(who: Person) {
    const started = result(await who.app("/age/prove"));
    const asked = result(await who.app("/age/dc-api-request", { presentation_id: started.presentation_id }));
    return { presentationId: started.presentation_id as string, requestUri: started.request_uri as string, asked };
  }

  /**
   * An honest credential presented as if the request had come by redirect: bound to the client_id and
   * the response_uri, not to the page's origin.
   */
  async function redirectBound(format: string, requestObject: string, responseUri: string) {
    const claims = jwtPayload(requestObject);
    const holder = newHolder();
    const { credential } = await createClient(AccountConsoleService, mesh.consoleTransport()).issueDevAgeCredential({
      birthDate: birthDates[30],
      holderJwk: holder.jwk,
      issuer: "development",
      format,
    });
    if (format === "mdoc")
      return {
        vp_token: JSON.parse(
          mdocVpToken(
            await deviceResponse({
              mdoc: credential,
              elements: euPidThresholds.map((t) => `age_over_${t}`),
              key: holder.privateKey,
              transcript: { clientId: String(claims.client_id), nonce: String(claims.nonce), responseUri },
            }),
          ),
        ),
      };
    const parts = credentialParts(credential);
    const asked = parts.disclosures.filter((d) =>
      euPidThresholds.includes(JSON.parse(Buffer.from(d, "base64url").toString())[1]),
    );
    return {
      vp_token: JSON.parse(
        vpToken(
          presentation({
            issuerJwt: parts.issuerJwt,
            disclosures: asked,
            key: holder.privateKey,
            nonce: String(claims.nonce),
            aud: String(claims.client_id),
            iat: Math.floor(Date.now() / 1000),
          }),
        ),
      ),
    };
  }

  for (const c of (["sd-jwt-vc", "mdoc"] as const).flatMap((format) => [
    { format, age: 30 as const, verdict: "over" },
    { format, age: 15 as const, verdict: "under" },
  ]))
    it(`${c.format} at ${c.age} through the app's DC API routes: accepted, and a later Age Gate at 18 reads ${c.verdict} at once`, async () => {
      const who = await person();
      const { presentationId, asked } = await dcApiRequest(who);
      expect(asked.protocol).toBe("openid4vp-v1-signed");
      const request = jwtPayload(asked.data.request);
      expect(request).toMatchObject({ response_mode: "dc_api", response_type: "vp_token", expected_origins: [origin] });
      expect(request).not.toHaveProperty("response_uri");
      expect(request).not.toHaveProperty("state");
      // Ahead of time it asks for the EU PID thresholds.
      expect(
        (request.dcql_query as { credentials: { claims: { path: string[] }[] }[] }).credentials[0]?.claims.map(
          (claim) => claim.path[1],
        ),
      ).toEqual(euPidThresholds);

      const data = await developmentDcApiAnswer(mesh, {
        requestObject: asked.data.request,
        origin,
        birthdate: birthDates[c.age],
        format: c.format,
      });
      expect(result(await who.app("/age/dc-api-response", { presentation_id: presentationId, data }))).toEqual({
        accepted: true,
      });
      expect(result(await who.app("/age/presentation", { presentation_id: presentationId }))).toEqual({
        state: "accepted",
      });
      // Used up: the same answer again is refused.
      expect(result(await who.app("/age/dc-api-response", { presentation_id: presentationId, data }))).toEqual({
        accepted: false,
        reason: "already_answered",
      });

      expect(await laterAgeGate(who)).toEqual({
        presentationStep: { needed: false },
        status: "completed",
        verdict: c.verdict,
      });
    });

  it("a refused answer stores nothing and leaves the step pending: redirect-bound, a wallet error, no vp_token", async () => {
    const who = await person();
    for (const format of ["sd-jwt-vc", "mdoc"]) {
      const { presentationId, requestUri, asked } = await dcApiRequest(who);
      const responseUri = requestUri.replace("/wallet/requests/", "/wallet/responses/");
      // The wallet's own error and an answer without vp_token are refused before account is asked; the
      // state keeps account's last refusal.
      const accountRefusal = format === "mdoc" ? "bad_device_signature" : "wrong_audience";
      const refusals: [Record<string, unknown>, string][] = [
        [await redirectBound(format, asked.data.request, responseUri), accountRefusal],
        [{ error: "access_denied" }, "wallet_error"],
        [{ vp: "nothing" }, "malformed_presentation"],
      ];
      for (const [data, reason] of refusals) {
        expect(result(await who.app("/age/dc-api-response", { presentation_id: presentationId, data }))).toEqual({
          accepted: false,
          reason,
        });
        expect(result(await who.app("/age/presentation", { presentation_id: presentationId }))).toEqual({
          state: "pending",
          last_refusal: accountRefusal,
        });
      }
      // Still pending: the honest answer after the refusals is accepted.
      const data = await developmentDcApiAnswer(mesh, {
        requestObject: asked.data.request,
        origin,
        birthdate: birthDates[30],
        format,
      });
      expect(result(await who.app("/age/dc-api-response", { presentation_id: presentationId, data }))).toEqual({
        accepted: true,
      });
    }
  });

  it("nothing refused was kept: a person whose answers were all refused still gets a presentation step", async () => {
    const who = await person();
    const { presentationId, requestUri, asked } = await dcApiRequest(who);
    const responseUri = requestUri.replace("/wallet/requests/", "/wallet/responses/");
    const data = await redirectBound("sd-jwt-vc", asked.data.request, responseUri);
    expect(result(await who.app("/age/dc-api-response", { presentation_id: presentationId, data }))).toEqual({
      accepted: false,
      reason: "wrong_audience",
    });
    const grant = result(await api.post("/sdk/create-session", {}, partner.devSecret)).anchor_grant_token;
    const link = result(
      await api.post("/sdk/create-verification-link", { gate: "adults", svc_user_id: who.svcUserId }, grant),
    );
    const opened = result(await who.app("/requests/open", { request_id: link.request_id, origin }));
    expect(opened.age_presentation).toMatchObject({ needed: true });
  });

  it("another person's presentation is not found on every app route; a bad id is a 400, no session a 401", async () => {
    const alice = await person();
    const bob = await person();
    const { presentationId, asked } = await dcApiRequest(alice);
    const data = await developmentDcApiAnswer(mesh, {
      requestObject: asked.data.request,
      origin,
      birthdate: birthDates[30],
    });
    for (const [path, body] of [
      ["/age/presentation", { presentation_id: presentationId }],
      ["/age/dc-api-request", { presentation_id: presentationId }],
      ["/age/dc-api-response", { presentation_id: presentationId, data }],
    ] as const) {
      expect(dataError(await bob.app(path, body)).statusCode, path).toBe(404);
      const malformed = await bob.app(path, { ...body, presentation_id: "apr_nope" });
      expect([malformed.status, malformed.body.code], path).toEqual([400, "InputValidationError"]);
      expect(dataError(await api.post(`/app${path}`, body)).statusCode, path).toBe(401);
    }
    // Bob's attempt touched nothing: Alice's step is pending without a refusal, and her answer is accepted.
    expect(result(await alice.app("/age/presentation", { presentation_id: presentationId }))).toEqual({
      state: "pending",
    });
    expect(result(await alice.app("/age/dc-api-response", { presentation_id: presentationId, data }))).toEqual({
      accepted: true,
    });
    // A presentation of a gate request is that request's flow's, not anyone's in the app.
    const grant = result(await api.post("/sdk/create-session", {}, partner.devSecret)).anchor_grant_token;
    const link = result(await api.post("/sdk/create-verification-link", { gate: "adults" }, grant));
    const t = decodeURIComponent(new URL(link.web_url).hash.slice(3));
    const flowStep = result(await api.post("/flow/requests/open", { request_id: link.request_id, t, origin }));
    const flowPresentation = flowStep.age_presentation.presentation_id as string;
    expect(dataError(await bob.app("/age/dc-api-request", { presentation_id: flowPresentation })).statusCode).toBe(404);
  });

  it("the web app's screen in Chromium: the QR code, a refusal in plain words, the wallet on this device; then an Age Gate at 18 needs only the passkey", async () => {
    const context = await browser.newContext({ viewport: phoneViewport });
    let wallet: Parameters<typeof withDigitalCredentials>[1] = async () => ({});
    const seen = await withDigitalCredentials(context, (asked, from) => wallet(asked, from));
    const { page, policyViolations } = await pageWithAuthenticator(context);
    const session = await signInAsNewPerson(page, origin);
    const svcUserId = result(await api.get("/app/me", {}, session)).svc_user_id as string;

    await page.getByRole("link", { name: "Passkeys" }).click();
    await page.getByRole("button", { name: "Create a passkey" }).click();
    await page.getByText("Passkey created.").waitFor();

    await page.getByRole("link", { name: "My age" }).click();
    await page.getByRole("heading", { name: "Prove your age", level: 1 }).waitFor();
    await page.getByRole("button", { name: "Show my age with a wallet" }).click();
    const qr = page.getByRole("img", { name: "QR code to scan with your wallet app" });
    await qr.waitFor();
    const qrUrl = String(await qr.getAttribute("src"));
    expect(qrUrl).toMatch(new RegExp(`^${origin}/wallet/requests/apr_[0-9a-f]{32}/qr\\.svg$`));
    // The page's policy lets it load the code: the image has its size.
    await page.waitForFunction(() => (document.querySelector("img.qr") as HTMLImageElement).naturalWidth > 0);
    await page.getByRole("status").filter({ hasText: "Waiting for your wallet" }).waitFor();
    const sameDevice = page.getByRole("button", { name: "Use a wallet on this device" });
    await reviewScreen(page, "age");

    // A wallet on another device answers the QR code's request by direct_post, from an untrusted issuer.
    const requestUri = qrUrl.replace(/\/qr\.svg$/, "");
    const requestObject = await (await fetch(requestUri)).text();
    const claims = jwtPayload(requestObject);
    const holder = newHolder();
    const untrusted = await createClient(AccountConsoleService, mesh.consoleTransport()).issueDevAgeCredential({
      birthDate: birthDates[30],
      holderJwk: holder.jwk,
      issuer: "untrusted",
      format: "sd-jwt-vc",
    });
    const parts = credentialParts(untrusted.credential);
    const posted = await fetch(String(claims.response_uri), {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({
        vp_token: vpToken(
          presentation({
            issuerJwt: parts.issuerJwt,
            disclosures: parts.disclosures.filter((d) =>
              euPidThresholds.includes(JSON.parse(Buffer.from(d, "base64url").toString())[1]),
            ),
            key: holder.privateKey,
            nonce: String(claims.nonce),
            aud: String(claims.client_id),
            iat: Math.floor(Date.now() / 1000),
          }),
        ),
        state: String(claims.state),
      }).toString(),
    });
    expect(posted.status).toBe(400);
    const alert = page.getByRole("alert");
    await alert.filter({ hasText: "comes from an issuer this service does not trust" }).waitFor({ timeout: 15_000 });
    expect(await alert.textContent()).toBe(
      "Your wallet's credential comes from an issuer this service does not trust. Nothing was kept.",
    );
    await page.getByRole("button", { name: "Try again" }).click();
    expect(await alert.isVisible()).toBe(false);

    // The wallet on this device: an answer bound as for the redirect is refused in plain words…
    wallet = async (asked) => redirectBound("sd-jwt-vc", asked.data.request, String(claims.response_uri));
    await sameDevice.click();
    await alert.filter({ hasText: "could not be verified" }).waitFor({ timeout: 15_000 });
    expect(await alert.textContent()).toBe("Your wallet's answer could not be verified. Nothing was kept.");
    expect(seen[0]?.protocol).toBe("openid4vp-v1-signed");
    expect(jwtPayload(seen[0]?.data.request ?? "")).toMatchObject({
      response_mode: "dc_api",
      expected_origins: [origin],
    });

    // …and the development wallet's answer for this origin is accepted.
    wallet = async (asked, from) =>
      developmentDcApiAnswer(mesh, { requestObject: asked.data.request, origin: from, birthdate: birthDates[30] });
    await sameDevice.click();
    await page.getByRole("status").filter({ hasText: "Your age is shown." }).waitFor({ timeout: 15_000 });
    expect(await qr.isVisible()).toBe(false);
    expect(await alert.isVisible()).toBe(false);
    await reviewScreen(page, "age-accepted");

    // A later Age Gate at 18 naming the person: no presentation step, the passkey finishes it; over.
    const grant = result(await api.post("/sdk/create-session", {}, partner.devSecret)).anchor_grant_token;
    const link = result(
      await api.post("/sdk/create-verification-link", { gate: "adults", svc_user_id: svcUserId }, grant),
    );
    await page.goto(`${origin}/app/requests/${link.request_id}`);
    await page.getByRole("heading", { name: "Confirm you are 18 or older" }).waitFor();
    await page.getByRole("button", { name: "Confirm with a passkey" }).click();
    await page.getByText("This request is completed.").waitFor({ timeout: 15_000 });
    const record = result(
      await api.get("/verification/status", { request_id: link.request_id }, partner.devSecret),
      true,
    );
    expect(record).toMatchObject({ status: "completed", age_verdict: "over" });
    expect(policyViolations).toEqual([]);
    await context.close();
  });
  it("the web app's request screen in Chromium: an Age Gate at 18 for a person without evidence runs the wallet step (a refusal, try again), then the passkey; over", async () => {
    const context = await browser.newContext({ viewport: phoneViewport });
    // The browser has the Digital Credentials API: the step offers the wallet on this device beside the QR code.
    await withDigitalCredentials(context, async () => ({}));
    const { page, policyViolations } = await pageWithAuthenticator(context);
    const session = await signInAsNewPerson(page, origin);
    const svcUserId = result(await api.get("/app/me", {}, session)).svc_user_id as string;
    await page.getByRole("link", { name: "Passkeys" }).click();
    await page.getByRole("button", { name: "Create a passkey" }).click();
    await page.getByText("Passkey created.").waitFor();

    const grant = result(await api.post("/sdk/create-session", {}, partner.devSecret)).anchor_grant_token;
    const link = result(
      await api.post("/sdk/create-verification-link", { gate: "adults", svc_user_id: svcUserId }, grant),
    );
    const requestId = link.request_id as string;
    await page.goto(`${origin}/app/requests/${requestId}`);
    await page.getByRole("heading", { name: "Confirm you are 18 or older" }).waitFor();
    await page.getByText("First, show your age with a wallet. Then confirm with a passkey.").waitFor();
    const qr = page.getByRole("img", { name: "QR code to scan with your wallet app" });
    expect(String(await qr.getAttribute("src"))).toMatch(
      new RegExp(`^${origin}/wallet/requests/apr_[0-9a-f]{32}/qr\\.svg$`),
    );
    await page.waitForFunction(() => (document.querySelector("img.qr") as HTMLImageElement).naturalWidth > 0);
    await page.getByRole("status").filter({ hasText: "Waiting for your wallet" }).waitFor();
    expect(await page.getByRole("button", { name: "Use a wallet on this device" }).isVisible()).toBe(true);
    const confirm = page.getByRole("button", { name: "Confirm with a passkey" });
    expect(await confirm.isVisible()).toBe(false);
    expect(await page.getByRole("button", { name: "Decline" }).isVisible()).toBe(true);
    await reviewScreen(page, "request-wallet");

    // The development wallet on another device answers the step's request by direct_post.
    const wallet = async (issuer: string) => {
      const run = await runSvcctl(mesh, [
        "wallet",
        "present",
        "--request",
        requestId,
        "--birthdate",
        birthDates[30],
        "--issuer",
        issuer,
      ]);
      expect(run.code, run.stderr).toBe(0);
      return JSON.parse(run.stdout);
    };
    expect(await wallet("untrusted")).toEqual({ accepted: false, reason: "untrusted_issuer" });
    const alert = page.getByRole("alert");
    await alert.filter({ hasText: "comes from an issuer this service does not trust" }).waitFor({ timeout: 15_000 });
    expect(await alert.textContent()).toBe(
      "Your wallet's credential comes from an issuer this service does not trust. Nothing was kept.",
    );
    await reviewScreen(page, "request-wallet-refused");
    await page.getByRole("button", { name: "Try again" }).click();
    expect(await alert.isVisible()).toBe(false);
    // The refusal stored nothing and the request is still pending.
    const pending = result(await api.get("/verification/status", { request_id: requestId }, partner.devSecret), true);
    expect(pending.status).toBe("pending");

    expect(await wallet("development")).toEqual({ accepted: true });
    await page
      .getByRole("status")
      .filter({ hasText: "Your age is shown. Now confirm with a passkey." })
      .waitFor({ timeout: 15_000 });
    expect(await qr.isVisible()).toBe(false);
    expect(await page.getByText("Confirm with a passkey on this device.").isVisible()).toBe(true);
    await confirm.click();
    await page.getByText("This request is completed.").waitFor({ timeout: 15_000 });
    const record = result(await api.get("/verification/status", { request_id: requestId }, partner.devSecret), true);
    expect(record).toMatchObject({ status: "completed", age_verdict: "over" });
    expect(policyViolations).toEqual([]);
    await context.close();
  });
});
