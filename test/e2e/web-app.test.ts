import { randomUUID } from "node:crypto";
import { createRemoteJWKSet, decodeJwt, jwtVerify } from "jose";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchHeadlessChromium } from "../harness/headless-browser.ts";
import { startTestMesh, type TestMesh } from "../harness/test-mesh.ts";
import { svcctlJson } from "./agent-support.ts";
import { issuer, newGate, newPartner, partnerApi, result } from "./gate-support.ts";
import { canonical, pageWithAuthenticator, phoneViewport, reviewScreen, sha256url } from "./web-app-support.ts";

/**
 * The person's web app at {api_origin}/app against the real mesh: the page's headers and language, the
 * mesh's development identity provider (deploy/dev-idp) as its OpenID Connect provider (authorization code
 * with PKCE, its ID token the app API's session), and in
 * headless Chromium with the DevTools virtual authenticator: sign in through the provider's page,
 * create a passkey, bind an agent with its link code, approve and deny two cards in one passkey ceremony
 * (proofs verified with jose, card_digest recomputed from the text the page showed), and confirm a gate
 * request. Every screen is checked with axe-core and photographed at phone and desktop size.
 */
const start = new Date();

describe("the web app", () => {
  let mesh: TestMesh;
  let browser: Browser;
  let origin: string;
  let api: ReturnType<typeof partnerApi>;
  const strictPolicy =
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; manifest-src 'self'; worker-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

  beforeAll(async () => {
    mesh = await startTestMesh("web_app", { clockAt: start });
    // Browsers refuse IP addresses as WebAuthn relying parties: the app is served as localhost.
    origin = `http://localhost:${new URL(mesh.gatewayUrl).port}`;
    await mesh.restart("gateway", { GATEWAY_PUBLIC_ORIGIN: origin });
    api = partnerApi(mesh);
    browser = await launchHeadlessChromium();
  }, 180_000);
  afterAll(async () => {
    await browser?.close();
    await mesh?.stop();
  });

  const get = (path: string, headers: Record<string, string> = {}) => fetch(`${mesh.gatewayUrl}${path}`, { headers });
  /** The screens' policy: the page also fetches the identity provider's discovery document and token endpoint. */
  const screenPolicy = () =>
    strictPolicy.replace("connect-src 'self'", `connect-src 'self' ${new URL(mesh.devIdpIssuer).origin}`);

  it("serves every screen, script and the stylesheet with a strict policy that forbids framing", async () => {
    for (const path of [
      "/app",
      "/app/inbox",
      "/app/passkeys",
      "/app/agents",
      "/app/signed-in",
      "/app/assets/main.js",
      "/app/assets/style.css",
    ]) {
      const response = await get(path);
      expect(response.status, path).toBe(200);
      expect(response.headers.get("content-security-policy"), path).toBe(
        path.startsWith("/app/assets/") ? strictPolicy : screenPolicy(),
      );
      expect(response.headers.get("referrer-policy"), path).toBe("no-referrer");
      expect(response.headers.get("x-content-type-options"), path).toBe("nosniff");
      expect(response.headers.get("x-frame-options"), path).toBe("DENY");
      await response.body?.cancel();
    }
    expect((await get("/app/assets/main.js")).headers.get("content-type")).toBe("text/javascript; charset=utf-8");
    expect((await get("/app/assets/style.css")).headers.get("content-type")).toBe("text/css; charset=utf-8");
    const page = await (await get("/app")).text();
    // No inline script or style: the policy would refuse them.
    expect(page).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>|<style|style=/);
    expect(page).toContain(`<meta name="oidc-issuer" content="${mesh.devIdpIssuer}">`);
    expect((await get("/app/assets/nothing.js")).status).toBe(404);
    expect((await get("/app/unknown-screen")).status).toBe(404);
  });

  it("picks German from Accept-Language and English otherwise", async () => {
    const german = await (await get("/app/inbox", { "accept-language": "fr-CH, de;q=0.8, en;q=0.5" })).text();
    expect(german).toContain('<html lang="de">');
    expect(german).toContain("<title>Ihre Bestätigungs-App</title>");
    const english = await (await get("/app/inbox", { "accept-language": "fr, it;q=0.9" })).text();
    expect(english).toContain('<html lang="en">');

    const context = await browser.newContext({ locale: "de-DE", viewport: phoneViewport });
    const page = await context.newPage();
    await page.goto(`${origin}/app`);
    await page.getByRole("heading", { name: "Anmelden" }).waitFor();
    await page.getByRole("button", { name: "Anmelden" }).click();
    await page.getByRole("heading", { name: "Entwicklungs-Identitätsanbieter" }).waitFor();
    await context.close();
  });

  describe("the development identity provider", () => {
    const redirectUri = () => `${origin}/app/signed-in`;
    const verifier = () => randomUUID() + randomUUID();

    /** The authorize form posted as the page posts it; answers the code from the redirect. */
    async function authorize(codeVerifier: string, subject: string, extra: Record<string, string> = {}) {
      const response = await fetch(`${mesh.devIdpIssuer}/authorize`, {
        method: "POST",
        redirect: "manual",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({
          response_type: "code",
          client_id: "svc-app",
          redirect_uri: redirectUri(),
          state: "state-1",
          nonce: "nonce-1",
          code_challenge: sha256url(codeVerifier),
          code_challenge_method: "S256",
          subject,
          ...extra,
        }),
      });
      return response;
    }
    const codeOf = (response: Response) => {
      expect(response.status).toBe(303);
      const back = new URL(response.headers.get("location") ?? "");
      expect(`${back.origin}${back.pathname}`).toBe(redirectUri());
      expect(back.searchParams.get("state")).toBe("state-1");
      return back.searchParams.get("code") ?? "";
    };
    const token = (code: string, codeVerifier: string) =>
      fetch(`${mesh.devIdpIssuer}/token`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({
          grant_type: "authorization_code",
          code,
          redirect_uri: redirectUri(),
          client_id: "svc-app",
          code_verifier: codeVerifier,
        }),
      });

    it("publishes its discovery document and shows a page that says what it is", async () => {
      const idp = mesh.devIdpIssuer;
      const discovered = await fetch(`${idp}/.well-known/openid-configuration`, { headers: { origin } });
      // The app's page reads it cross-origin.
      expect(discovered.headers.get("access-control-allow-origin")).toBe(origin);
      expect(await discovered.json()).toMatchObject({
        issuer: idp,
        authorization_endpoint: `${idp}/authorize`,
        token_endpoint: `${idp}/token`,
        jwks_uri: `${idp}/.well-known/jwks.json`,
        code_challenge_methods_supported: ["S256"],
      });
      const query = new URLSearchParams({
        response_type: "code",
        client_id: "svc-app",
        redirect_uri: redirectUri(),
        state: "s",
        code_challenge: sha256url("v"),
        code_challenge_method: "S256",
      });
      const page = await fetch(`${idp}/authorize?${query}`);
      expect(page.status).toBe(200);
      expect(page.headers.get("content-security-policy")).toBe(
        `default-src 'none'; style-src 'self'; form-action 'self' ${origin}; base-uri 'none'; frame-ancestors 'none'`,
      );
      expect(await page.text()).toContain("This is the development identity provider, not a real sign-in");
      // Another site's redirect is never followed: the page refuses and sends nobody anywhere.
      query.set("redirect_uri", "https://evil.example/app/signed-in");
      const refused = await fetch(`${idp}/authorize?${query}`);
      expect(refused.status).toBe(400);
      expect(await refused.text()).toContain("redirect_uri is not one of the web app&#39;s");
      const posted = await authorize(verifier(), "mallory", { redirect_uri: "https://evil.example/app/signed-in" });
      expect(posted.status).toBe(400);
      expect(posted.headers.get("location")).toBeNull();
    });

    it("vouches for an identifier that is an e-mail address as the ID token's verified email", async () => {
      const claimsOf = async (subject: string) => {
        const right = verifier();
        const body = await (await token(codeOf(await authorize(right, subject)), right)).json();
        return decodeJwt(body.id_token);
      };
      const address = `Person.${randomUUID().slice(0, 8)}@Mail.example`;
      expect(await claimsOf(address)).toMatchObject({ sub: address, email: address, email_verified: true });
      const plain = await claimsOf(`person-${randomUUID()}`);
      expect(plain).not.toHaveProperty("email");
      expect(plain).not.toHaveProperty("email_verified");
    });

    it("trades a code and its PKCE verifier for an ID token, once, within a minute of the injected clock", async () => {
      const subject = `person-${randomUUID()}`;
      const right = verifier();
      const code = codeOf(await authorize(right, subject));
      const answered = await token(code, right);
      expect(answered.status).toBe(200);
      expect(answered.headers.get("cache-control")).toBe("no-store");
      const body = await answered.json();
      expect(body).toMatchObject({ token_type: "Bearer", expires_in: 3600 });
      const keySet = createRemoteJWKSet(new URL(`${mesh.devIdpIssuer}/.well-known/jwks.json`));
      const { payload } = await jwtVerify(body.id_token, keySet, {
        issuer: mesh.devIdpIssuer,
        audience: "svc-app",
        currentDate: start,
      });
      expect(payload).toMatchObject({ sub: subject, nonce: "nonce-1", iat: Math.floor(start.getTime() / 1000) });
      // The ID token is the app API's session.
      expect(result(await api.get("/app/me", {}, body.id_token)).svc_user_id).toMatch(/^[0-9a-f-]{36}$/);
      // Single use.
      expect(await (await token(code, right)).json()).toMatchObject({ error: "invalid_grant" });

      // A wrong verifier spends the code all the same.
      const other = verifier();
      const stolen = codeOf(await authorize(other, subject));
      expect(await (await token(stolen, verifier())).json()).toMatchObject({ error: "invalid_grant" });
      expect(await (await token(stolen, other)).json()).toMatchObject({ error: "invalid_grant" });

      // Past its minute on the mesh's clock.
      const late = verifier();
      const stale = codeOf(await authorize(late, subject));
      mesh.setClock(new Date(start.getTime() + 61_000));
      try {
        expect(await (await token(stale, late)).json()).toMatchObject({ error: "invalid_grant" });
      } finally {
        mesh.setClock(start);
      }
    });
  });

  it("signs in, creates a passkey, binds an agent, decides two cards in one ceremony, confirms a request, unbinds", async () => {
    const svcctl = svcctlJson(mesh);
    const context = await browser.newContext({ locale: "en-US", viewport: phoneViewport });
    const { page, credentials, policyViolations } = await pageWithAuthenticator(context);
    page.setDefaultTimeout(15_000);

    // Sign in through the development identity provider's page.
    await page.goto(`${origin}/app`);
    await page.getByRole("heading", { name: "Sign in" }).waitFor();
    await reviewScreen(page, "sign-in");
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("heading", { name: "Development identity provider" }).waitFor();
    await reviewScreen(page, "dev-identity-provider");
    const subject = `web-${randomUUID()}`;
    await page.getByLabel("Sign in as").fill(subject);
    await page.getByRole("button", { name: "Continue" }).click();
    // Back where the person started, signed in.
    await page.getByRole("heading", { name: "Inbox" }).waitFor();
    expect(page.url()).toBe(`${origin}/app`);
    const session = (await page.evaluate(() => sessionStorage.getItem("svc.id_token"))) ?? "";
    expect(decodeJwt(session)).toMatchObject({ iss: mesh.devIdpIssuer, sub: subject, aud: "svc-app" });
    const svcUserId = result(await api.get("/app/me", {}, session)).svc_user_id as string;

    // A passkey.
    await page.getByRole("link", { name: "Passkeys" }).click();
    await page.getByRole("heading", { name: "Passkeys", level: 1 }).waitFor();
    await page.getByRole("button", { name: "Create a passkey" }).click();
    await page.getByText("Passkey created.").waitFor();
    expect(await credentials()).toHaveLength(1);
    await reviewScreen(page, "passkeys");

    // An agent shows a link code; the person claims it.
    const { organizationId } = await mesh.console.createOrganization({ name: "Agents Inc" });
    const registered = await svcctl([
      ...["agent", "register", "--org", organizationId, "--env", "development", "--name", "Pay_Bot"],
      ...["--category", "payments"],
    ]);
    const agentKey = registered.agent_key as string;
    const linkCode = result(await api.post("/agent/bind-session", {}, agentKey)).link_code as string;
    await page.getByRole("link", { name: "Agents" }).click();
    await page.getByLabel("Link code the agent shows").fill(linkCode);
    await page.getByRole("button", { name: "Bind the agent" }).click();
    await page.getByText("Pay_Bot is now bound to you.").waitFor();
    await page.getByRole("button", { name: "Unbind Pay_Bot" }).waitFor();
    await reviewScreen(page, "agents");
    const opaqueId = result(await api.get("/agent/check-binding", { link_code: linkCode }, agentKey))
      .opaque_id as string;

    // Two cards: one with a detail row and an Adaptive Card, one the trust layer warns about.
    const inquire = async (action: Record<string, unknown>, payload: Record<string, unknown>) =>
      result(
        await api.post(
          "/agentlink/inquire",
          { request_id: randomUUID(), opaque_id: opaqueId, action, adaptive_card_payload: payload },
          agentKey,
        ),
      ).card_id as string;
    const invoice = await inquire(
      {
        summary_title: "Pay invoice 2231",
        category: "payments",
        summary_detail: { label: "Amount", value: "EUR 120.00" },
      },
      {
        type: "AdaptiveCard",
        version: "1.5",
        body: [
          { type: "TextBlock", text: "Invoice 2231 from Acme Supplies", wrap: true },
          { type: "FactSet", facts: [{ title: "Due", value: "1 December" }] },
        ],
      },
    );
    const refund = await inquire(
      { summary_title: "Refund order 88", category: "payments" },
      {
        type: "AdaptiveCard",
        version: "1.5",
        body: [{ type: "TextBlock", text: "Details at shop.example.com", wrap: true }],
      },
    );

    await page.getByRole("link", { name: "Inbox" }).click();
    const invoiceCard = page.locator(`article[data-card-id="${invoice}"]`);
    const refundCard = page.locator(`article[data-card-id="${refund}"]`);
    await invoiceCard.waitFor();
    await refundCard.waitFor();
    await expect(invoiceCard.locator(".adaptive").textContent()).resolves.toContain("Invoice 2231 from Acme Supplies");
    await expect(invoiceCard.locator(".caution").count()).resolves.toBe(0);
    await expect(refundCard.getByRole("region", { name: "Caution" }).textContent()).resolves.toContain(
      "A domain name in the text could be mistaken for where the action goes.",
    );
    // What each card shows under "exactly what your passkey signs", read from the page's text.
    const shown = async (card: typeof invoiceCard) => {
      await card.getByText("Exactly what your passkey signs for this card").click();
      const signed = (await card.locator("pre[data-signed]").textContent()) ?? "";
      const fields = JSON.parse(signed);
      // It is canonical, and the visible fields are its fields.
      expect(canonical(fields)).toBe(signed);
      expect(await card.locator('[data-field="summary_title"]').textContent()).toBe(fields.summary_title);
      expect(await card.locator('[data-field="category"]').textContent()).toBe(fields.category);
      if (fields.summary_detail) {
        expect(await card.locator('[data-field="summary_detail.label"]').textContent()).toBe(
          fields.summary_detail.label,
        );
        expect(await card.locator('[data-field="summary_detail.value"]').textContent()).toBe(
          fields.summary_detail.value,
        );
      }
      return { signed, fields };
    };
    const invoiceShown = await shown(invoiceCard);
    expect(invoiceShown.fields).toMatchObject({
      summary_title: "Pay invoice 2231",
      summary_detail: { label: "Amount", value: "EUR 120.00" },
    });
    const refundShown = await shown(refundCard);
    await reviewScreen(page, "inbox-cards");

    await invoiceCard.getByLabel("Approve").check();
    await refundCard.getByLabel("Deny").check();
    const countBefore = (await credentials())[0]?.signCount ?? 0;
    const confirmed = page.waitForResponse((r) => r.url() === `${origin}/v1/agentlink/confirm`);
    await page.getByRole("button", { name: "Confirm my decisions with a passkey" }).click();
    const answer = await (await confirmed).json();
    await page.getByText("Confirmed 2 decisions.").waitFor();
    // The inbox still tells of the new binding until the person dismisses it.
    const notices = page.getByRole("region", { name: "Notices" });
    await notices.getByText("Pay_Bot is now bound to you.").waitFor();
    const dismiss = notices.getByRole("button", { name: "Dismiss" });
    expect(
      await dismiss.evaluate(
        (b) => b.closest("li")?.querySelector(`[id="${b.getAttribute("aria-describedby")}"]`)?.textContent,
      ),
    ).toBe("Pay_Bot is now bound to you.");
    await dismiss.click();
    await page.getByText("Nothing is waiting for you.").waitFor();
    // One passkey ceremony for both cards.
    expect((await credentials())[0]?.signCount).toBe(countBefore + 1);

    const { resolutions, ceremony_id: ceremonyId, signed_at: signedAt } = answer.data.data;
    expect(resolutions).toHaveLength(2);
    const keySet = createRemoteJWKSet(new URL(`${mesh.gatewayUrl}/.well-known/jwks.json`), { cacheMaxAge: 0 });
    const proofs = new Map<string, Record<string, unknown>>();
    for (const resolution of resolutions) {
      const { payload } = await jwtVerify(resolution.token, keySet, {
        issuer,
        algorithms: ["ES256"],
        currentDate: start,
      });
      proofs.set(resolution.card_id, payload);
    }
    expect(proofs.get(invoice)).toMatchObject({
      verdict: "approve",
      card_id: invoice,
      sub: opaqueId,
      ceremony_id: ceremonyId,
      iat: new Date(signedAt).getTime() / 1000,
      card_digest: sha256url(invoiceShown.signed),
      amr: ["passkey"],
    });
    expect(proofs.get(refund)).toMatchObject({
      verdict: "denied",
      card_id: refund,
      ceremony_id: ceremonyId,
      card_digest: sha256url(refundShown.signed),
    });

    // A gate request naming the person, opened from its deep link and confirmed with the passkey.
    const partner = await newPartner(mesh, "Web shop");
    await newGate(mesh, partner.organizationId, { key: "web" });
    const grant = result(await api.post("/sdk/create-session", {}, partner.devSecret)).anchor_grant_token;
    const link = result(
      await api.post("/sdk/create-verification-link", { gate: "web", svc_user_id: svcUserId }, grant),
    );
    // The live inbox lists it too (with its own Open button); this one goes through the link form.
    const linkForm = page.locator("form", { has: page.getByLabel("Request link or request id") });
    await linkForm.getByLabel("Request link or request id").fill(link.deep_link);
    await linkForm.getByRole("button", { name: "Open", exact: true }).click();
    await page.getByRole("heading", { name: "Confirm you are a person" }).waitFor();
    await page.getByRole("button", { name: "Confirm with a passkey" }).waitFor();
    await reviewScreen(page, "request");
    await page.getByRole("button", { name: "Confirm with a passkey" }).click();
    await page.getByText("This request is completed.").waitFor();
    const record = result(
      await api.get("/verification/status", { request_id: link.request_id }, partner.devSecret),
      true,
    );
    expect(record).toMatchObject({ status: "completed" });

    // The agent is unbound again: its opaque_id names nobody from now on.
    await page.getByRole("link", { name: "Agents" }).click();
    await page.getByRole("button", { name: "Unbind Pay_Bot" }).click();
    await page.getByText("Pay_Bot is no longer bound to you.").waitFor();
    await page.getByText("No agent is bound to you.").waitFor();

    // The remaining screens render and are accessible.
    for (const [link, name, heading] of [
      ["Secured accounts", "accounts", "Secured accounts"],
      ["Delete my account", "delete-account", "Delete my account"],
    ] as const) {
      await page.getByRole("link", { name: link }).click();
      await page.getByRole("heading", { name: heading, level: 1 }).waitFor();
      await reviewScreen(page, name);
    }

    // Signing out forgets the session.
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.getByRole("heading", { name: "Sign in" }).waitFor();
    expect(await page.evaluate(() => sessionStorage.getItem("svc.id_token"))).toBeNull();
    expect(policyViolations).toEqual([]);
    await context.close();
  }, 180_000);
});
