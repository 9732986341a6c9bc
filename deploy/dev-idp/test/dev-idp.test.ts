import { createHash } from "node:crypto";
import type { Server } from "node:http";
import { ManualClock } from "@svc/platform/clock";
import { createLocalJWKSet, decodeJwt, jwtVerify } from "jose";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { startIdentityProvider } from "../src/server.ts";

const appOrigin = "http://localhost:18080";
const redirectUri = `${appOrigin}/app/signed-in`;
const verifier = "v".repeat(43);
const challenge = createHash("sha256").update(verifier).digest("base64url");
const clock = new ManualClock("2026-03-01T10:00:00Z");
const seed = "dev-idp test seed";

let issuer: string;
let server: Server;

beforeAll(async () => {
  ({ issuer, server } = await startIdentityProvider(
    { DEV_IDP_PORT: "0", DEV_IDP_APP_ORIGINS: `http://127.0.0.1:18080,${appOrigin}`, DEV_IDP_KEY_SEED: seed },
    clock,
  ));
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

const authorizeQuery = (overrides: Record<string, string> = {}) =>
  new URLSearchParams({
    response_type: "code",
    client_id: "svc-app",
    redirect_uri: redirectUri,
    state: "state-1",
    code_challenge: challenge,
    code_challenge_method: "S256",
    nonce: "nonce-1",
    ...overrides,
  });

/** Signs in as `subject` on the authorize form; the code the redirect carries. */
async function codeFor(subject: string): Promise<string> {
  const fields = authorizeQuery();
  fields.set("subject", subject);
  const response = await fetch(`${issuer}/authorize`, { method: "POST", body: fields, redirect: "manual" });
  expect(response.status).toBe(303);
  const back = new URL(response.headers.get("location") ?? "");
  expect(`${back.origin}${back.pathname}`).toBe(redirectUri);
  expect(back.searchParams.get("state")).toBe("state-1");
  expect(back.searchParams.get("iss")).toBe(issuer);
  return back.searchParams.get("code") ?? "";
}

const redeem = (code: string, overrides: Record<string, string> = {}) =>
  fetch(`${issuer}/token`, {
    method: "POST",
    headers: { origin: appOrigin },
    body: new URLSearchParams({
      grant_type: "authorization_code",
      code,
      client_id: "svc-app",
      redirect_uri: redirectUri,
      code_verifier: verifier,
      ...overrides,
    }),
  });

async function verified(token: string) {
  const keys = await (await fetch(`${issuer}/.well-known/jwks.json`)).json();
  return (await jwtVerify(token, createLocalJWKSet(keys), { issuer, audience: "svc-app", currentDate: clock.now() }))
    .payload;
}

describe("the development identity provider", () => {
  test("its discovery document names its endpoints under its issuer, readable by the app's origin", async () => {
    const response = await fetch(`${issuer}/.well-known/openid-configuration`, { headers: { origin: appOrigin } });
    expect(response.status).toBe(200);
    expect(response.headers.get("access-control-allow-origin")).toBe(appOrigin);
    expect(await response.json()).toMatchObject({
      issuer,
      authorization_endpoint: `${issuer}/authorize`,
      token_endpoint: `${issuer}/token`,
      jwks_uri: `${issuer}/.well-known/jwks.json`,
      code_challenge_methods_supported: ["S256"],
    });
    const elsewhere = await fetch(`${issuer}/.well-known/openid-configuration`, {
      headers: { origin: "https://evil.example" },
    });
    expect(elsewhere.headers.get("access-control-allow-origin")).toBeNull();
  });

  test("the authorize page says what it is, in the reader's language, under its own CSP", async () => {
    const page = await fetch(`${issuer}/authorize?${authorizeQuery()}`, { headers: { "accept-language": "de" } });
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain('<html lang="de">');
    expect(html).toContain("Entwicklungs-Identitätsanbieter");
    expect(html).toContain('<link rel="stylesheet" href="/style.css">');
    expect(html).not.toMatch(/<script|<style|style=/);
    expect(page.headers.get("content-security-policy")).toBe(
      `default-src 'none'; style-src 'self'; form-action 'self' ${appOrigin}; base-uri 'none'; frame-ancestors 'none'`,
    );
    const style = await fetch(`${issuer}/style.css`);
    expect(style.headers.get("content-type")).toBe("text/css; charset=utf-8");
    expect(await style.text()).toContain(".caution");
  });

  test("an authorization request for another redirect or without S256 is refused on the page", async () => {
    const elsewhere = await fetch(`${issuer}/authorize?${authorizeQuery({ redirect_uri: "https://evil.example/cb" })}`);
    expect(elsewhere.status).toBe(400);
    expect(await elsewhere.text()).toContain("redirect_uri is not one of the web app&#39;s");
    const plain = await fetch(`${issuer}/authorize?${authorizeQuery({ code_challenge_method: "plain" })}`);
    expect(plain.status).toBe(400);
    expect(await plain.text()).toContain("code_challenge_method must be S256");
  });

  test("a code gives one ID token with the nonce; an e-mail identifier is its verified address", async () => {
    const response = await redeem(await codeFor("ada@example.com"));
    expect(response.status).toBe(200);
    expect(response.headers.get("access-control-allow-origin")).toBe(appOrigin);
    const body = await response.json();
    expect(body).toMatchObject({ token_type: "Bearer", expires_in: 3600 });
    expect(body.access_token).toBe(body.id_token);
    expect(await verified(body.id_token)).toMatchObject({
      iss: issuer,
      sub: "ada@example.com",
      aud: "svc-app",
      nonce: "nonce-1",
      email: "ada@example.com",
      email_verified: true,
      iat: clock.now().getTime() / 1000,
    });
    const plain = decodeJwt((await (await redeem(await codeFor("ada"))).json()).id_token);
    expect(plain.email).toBeUndefined();
  });

  test("a code is spent by its first redemption, even a wrong one, and expires after a minute", async () => {
    const code = await codeFor("grace");
    const wrong = await redeem(code, { code_verifier: "w".repeat(43) });
    expect(wrong.status).toBe(400);
    expect(await wrong.json()).toMatchObject({ error: "invalid_grant" });
    expect((await redeem(code)).status).toBe(400);
    const late = await codeFor("grace");
    clock.advance(60_000);
    expect(await (await redeem(late)).json()).toMatchObject({ error: "invalid_grant" });
  });

  test("the token endpoint refuses another grant type and an oversized body", async () => {
    const other = await redeem("x", { grant_type: "password" });
    expect(await other.json()).toMatchObject({ error: "unsupported_grant_type" });
    const tooLarge = await fetch(`${issuer}/token`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: "a".repeat(20_000),
    });
    expect(tooLarge.status).toBe(413);
  });

  test("mint gives a session with the e-mail claims as asked; a subject is required", async () => {
    const minted = await fetch(`${issuer}/mint`, {
      method: "POST",
      body: JSON.stringify({ subject: "sandbox-1", email: "b@example.com", email_verified: false }),
    });
    expect(minted.status).toBe(200);
    const { session_token, expires_at } = await minted.json();
    expect(expires_at).toBe(new Date(clock.now().getTime() + 3_600_000).toISOString());
    expect(await verified(session_token)).toMatchObject({
      sub: "sandbox-1",
      email: "b@example.com",
      email_verified: false,
    });
    const missing = await fetch(`${issuer}/mint`, { method: "POST", body: JSON.stringify({ email: "b@example.com" }) });
    expect(missing.status).toBe(400);
    expect(await missing.json()).toEqual({ error: "subject is required" });
    expect((await fetch(`${issuer}/mint`, { method: "POST", body: "{" })).status).toBe(400);
  });

  test("the same seed signs with the same key after a restart; production refuses to start it", async () => {
    const again = await startIdentityProvider({ DEV_IDP_PORT: "0", DEV_IDP_KEY_SEED: seed }, clock);
    const keys = async (base: string) => (await (await fetch(`${base}/.well-known/jwks.json`)).json()).keys;
    expect(await keys(again.issuer)).toEqual(await keys(issuer));
    again.server.close();
    await expect(startIdentityProvider({ SVC_DEPLOYMENT: "production" }, clock)).rejects.toThrow(
      "the development identity provider does not run in production",
    );
  });
});
