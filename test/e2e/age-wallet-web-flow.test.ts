import { createClient } from "@connectrpc/connect";
import { AccountConsoleService } from "@svc/proto/account/v1/account_pb.js";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type DigitalRequest, developmentDcApiAnswer, withDigitalCredentials } from "../harness/digital-credentials.ts";
import { launchHeadlessChromium } from "../harness/headless-browser.ts";
import { deviceResponse, mdocVpToken } from "../harness/mdoc-holder.ts";
import { runSvcctl } from "../harness/svcctl.ts";
import { startTestMesh, type TestMesh } from "../harness/test-mesh.ts";
import { credentialParts, jwtPayload, newHolder, presentation, vpToken } from "../harness/wallet-holder.ts";
import { dataError, newGate, newPartner, partnerApi, result } from "./gate-support.ts";

/**
 * The person's page of an Age Gate in Chromium through the QR path: the page shows the wallet's QR code,
 * the development wallet answers from "another device" (svcctl), a refusal is shown in plain words, and
 * after the honest answer the page moves on to the passkey by itself; the partner reads "over".
 */
describe("the Age Gate's web flow with a wallet on another device", () => {
  let mesh: TestMesh;
  let browser: Browser;
  /** The gateway's public origin, which the page is served from. */
  let origin: string;

  beforeAll(async () => {
    mesh = await startTestMesh("age_web", { only: ["signing", "account", "gate"] });
    // Browsers refuse IP addresses as WebAuthn relying parties: the page is served as localhost.
    origin = `http://localhost:${new URL(mesh.gatewayUrl).port}`;
    await mesh.restart("gateway", { GATEWAY_PUBLIC_ORIGIN: origin });
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

  /** A page with a virtual passkey authenticator. */
  async function pageWithPasskeys(context: BrowserContext): Promise<Page> {
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
    return page;
  }

  it("same device through the Digital Credentials API: the page's origin binds the answer, a redirect-bound one is refused", async () => {
    const api = partnerApi(mesh);
    const partner = await newPartner(mesh, "Adults only, same device");
    await newGate(mesh, partner.organizationId, { key: "adults", age: 18 });
    const request = async () => {
      const grant = result(await api.post("/sdk/create-session", {}, partner.devSecret)).anchor_grant_token;
      return result(await api.post("/sdk/create-verification-link", { gate: "adults" }, grant));
    };
    const accountConsole = createClient(AccountConsoleService, mesh.consoleTransport());

    /** The development wallet (svcctl) answering through the DC API for a person born on `birthdate`. */
    const developmentWallet = (birthdate: string, format: string) => async (asked: DigitalRequest, origin: string) =>
      developmentDcApiAnswer(mesh, { requestObject: asked.data.request, origin, birthdate, format });
    /**
     * An honest credential presented as if the request had come by redirect: bound to client_id and
     * the response_uri of the step the page shows (its QR code names the presentation).
     */
    const redirectBound = (format: string, page: Page) => async (asked: { data: { request: string } }) => {
      const claims = jwtPayload(asked.data.request);
      const holder = newHolder();
      const { credential } = await accountConsole.issueDevAgeCredential({
        birthDate: "1990-01-01",
        holderJwk: holder.jwk,
        issuer: "development",
        format,
      });
      const qr = String(await page.getAttribute("#qr", "src"));
      const responseUri = qr.replace("/wallet/requests/", "/wallet/responses/").replace(/\/qr\.svg$/, "");
      if (format === "mdoc")
        return {
          vp_token: JSON.parse(
            mdocVpToken(
              await deviceResponse({
                mdoc: credential,
                elements: ["age_over_18"],
                key: holder.privateKey,
                transcript: { clientId: String(claims.client_id), nonce: String(claims.nonce), responseUri },
              }),
            ),
          ),
        };
      const parts = credentialParts(credential);
      const only18 = parts.disclosures.filter((d) => JSON.parse(Buffer.from(d, "base64url").toString())[1] === "18");
      return {
        vp_token: JSON.parse(
          vpToken(
            presentation({
              issuerJwt: parts.issuerJwt,
              disclosures: only18,
              key: holder.privateKey,
              nonce: String(claims.nonce),
              aud: String(claims.client_id),
              iat: Math.floor(Date.now() / 1000),
            }),
          ),
        ),
      };
    };

    for (const format of ["sd-jwt-vc", "mdoc"]) {
      const link = await request();
      const context = await browser.newContext();
      let wallet: Parameters<typeof withDigitalCredentials>[1] = async () => ({});
      const seen = await withDigitalCredentials(context, (asked, from) => wallet(asked, from));
      const page = await pageWithPasskeys(context);
      wallet = redirectBound(format, page);
      await page.goto(link.web_url);
      const sameDevice = page.getByRole("button", { name: "Use a wallet on this device" });
      await sameDevice.waitFor();

      // An answer bound as for the redirect (client_id, response_uri) is refused on the DC API path.
      await sameDevice.click();
      await page.getByText("could not be verified").waitFor({ timeout: 15_000 });
      const [asked] = seen;
      expect(asked?.protocol).toBe("openid4vp-v1-signed");
      expect(jwtPayload(asked?.data.request ?? "")).toMatchObject({
        response_mode: "dc_api",
        expected_origins: [origin],
      });
      expect(jwtPayload(asked?.data.request ?? "")).not.toHaveProperty("response_uri");

      // The development wallet's answer for this origin is accepted; the page moves on to the passkey.
      wallet = developmentWallet(format === "mdoc" ? "2011-01-15" : "1990-01-01", format);
      await sameDevice.click();
      await page.getByText("Confirm with a passkey on this device").waitFor({ timeout: 15_000 });
      await page.getByRole("button", { name: "Create a passkey" }).click();
      await page.getByText("Passkey created").waitFor();
      await page.getByRole("button", { name: "Continue with a passkey" }).click();
      await page.getByText("Done. You can close this page.").waitFor({ timeout: 15_000 });
      await context.close();

      // Over for the SD-JWT VC at 1990, under for the mdoc at 2011: only the verdict reaches the partner.
      const record = result(
        await api.get("/verification/status", { request_id: link.request_id }, partner.devSecret),
        true,
      );
      expect(record).toMatchObject({ status: "completed", age_verdict: format === "mdoc" ? "under" : "over" });
    }
  });

  it("a DC API answer posted by direct_post is refused (bound to the origin, not the client_id)", async () => {
    const api = partnerApi(mesh);
    const partner = await newPartner(mesh, "Adults only, vice versa");
    await newGate(mesh, partner.organizationId, { key: "adults", age: 18 });
    const grant = result(await api.post("/sdk/create-session", {}, partner.devSecret)).anchor_grant_token;
    const link = result(await api.post("/sdk/create-verification-link", { gate: "adults" }, grant));
    const t = decodeURIComponent(new URL(link.web_url).hash.slice(3));
    const opened = result(await api.post("/flow/requests/open", { request_id: link.request_id, t, origin }));
    const presentationId = opened.age_presentation.presentation_id as string;
    const asked = result(
      await api.post("/flow/requests/presentation/dc-api-request", {
        request_id: link.request_id,
        t,
        presentation_id: presentationId,
      }),
    );
    expect(jwtPayload(asked.data.request)).toMatchObject({ expected_origins: [origin] });
    for (const format of ["sd-jwt-vc", "mdoc"]) {
      const run = await runSvcctl(mesh, [
        "wallet",
        "dc-api",
        "--request-object",
        asked.data.request,
        "--origin",
        origin,
        "--birthdate",
        "1990-01-01",
        "--format",
        format,
      ]);
      expect(run.code, run.stderr).toBe(0);
      const answer = JSON.parse(run.stdout);
      const posted = await fetch(`${mesh.gatewayUrl}/wallet/responses/${presentationId}`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ vp_token: JSON.stringify(answer.vp_token), state: presentationId }).toString(),
      });
      expect(posted.status).toBe(400);
      expect(await posted.json()).toEqual({
        error: "invalid_request",
        error_description: format === "mdoc" ? "bad_device_signature" : "wrong_audience",
      });
    }
    // The wallet refuses a request for another origin, as OpenID4VP 1.0 Appendix A.2 asks.
    const elsewhere = await runSvcctl(mesh, [
      "wallet",
      "dc-api",
      "--request-object",
      asked.data.request,
      "--origin",
      "https://attacker.example",
      "--birthdate",
      "1990-01-01",
    ]);
    expect(JSON.parse(elsewhere.stdout)).toEqual({ error: "invalid_request" });
    // The development wallet authenticates the verifier (x509_hash): a request whose x5c leaf is not the
    // one client_id names, or whose payload was changed under the signature, gets no answer but invalid_client.
    const [header = "", payload = "", signature = ""] = String(asked.data.request).split(".");
    const decodedHeader = JSON.parse(Buffer.from(header, "base64url").toString());
    const otherLeaf = Buffer.concat([Buffer.from(decodedHeader.x5c[0], "base64"), Buffer.from([0])]).toString("base64");
    const reencode = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");
    const forged = [
      `${reencode({ ...decodedHeader, x5c: [otherLeaf] })}.${payload}.${signature}`,
      `${header}.${reencode({ ...jwtPayload(asked.data.request), nonce: "another" })}.${signature}`,
    ];
    for (const requestObject of forged) {
      const run = await runSvcctl(mesh, [
        "wallet",
        "dc-api",
        "--request-object",
        requestObject,
        "--origin",
        origin,
        "--birthdate",
        "1990-01-01",
      ]);
      expect(JSON.parse(run.stdout)).toEqual({ error: "invalid_client" });
    }
    // Without the flow secret the DC API routes answer not found, like the step's state.
    const refused = await api.post("/flow/requests/presentation/dc-api-response", {
      request_id: link.request_id,
      t: "wrong",
      presentation_id: presentationId,
      data: {},
    });
    expect(dataError(refused).statusCode).toBe(404);
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
