/**
 * Signing in: OpenID Connect authorization code with PKCE (S256), the same in development (the
 * development identity provider, deploy/dev-idp) and production (the configured issuer). The ID token is kept in
 * sessionStorage, sent as `Authorization: Bearer` and never in a cookie, so no other site can make the
 * browser call the API as the person.
 */
const tokenKey = "svc.id_token";
const pendingKey = "svc.sign_in";

interface Pending {
  state: string;
  verifier: string;
  nonce: string;
  returnTo: string;
}

interface ProviderConfig {
  issuer: string;
  authorization_endpoint: string;
  token_endpoint: string;
}

const meta = (name: string) => document.querySelector<HTMLMetaElement>(`meta[name="${name}"]`)?.content;

/** Whom this page signs in with, as the server configured it; undefined when signing in is not set up. */
export function signInSettings(): { issuer: string; clientId: string; redirectUri: string } | undefined {
  const issuer = meta("oidc-issuer");
  const clientId = meta("oidc-client-id");
  const redirectUri = meta("oidc-redirect-uri");
  return issuer && clientId && redirectUri ? { issuer, clientId, redirectUri } : undefined;
}

const base64url = (bytes: Uint8Array): string =>
  btoa(String.fromCharCode(...bytes))
    .replace(/\+/g, "-")
    .replace(/\//g, "_")
    .replace(/=+$/, "");
const randomText = (): string => base64url(crypto.getRandomValues(new Uint8Array(32)));

async function discover(issuer: string): Promise<ProviderConfig> {
  const response = await fetch(`${issuer.replace(/\/$/, "")}/.well-known/openid-configuration`);
  if (!response.ok) throw new Error(`the identity provider answered HTTP ${response.status}`);
  const config = (await response.json()) as ProviderConfig;
  if (config.issuer !== issuer) throw new Error("the identity provider names another issuer");
  return config;
}

/** Sends the browser to the identity provider; it comes back to the redirect URI with a code. */
export async function beginSignIn(returnTo: string): Promise<void> {
  const settings = signInSettings();
  if (!settings) throw new Error("signing in is not set up");
  const provider = await discover(settings.issuer);
  const pending: Pending = { state: randomText(), verifier: randomText(), nonce: randomText(), returnTo };
  sessionStorage.setItem(pendingKey, JSON.stringify(pending));
  const challenge = base64url(
    new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(pending.verifier))),
  );
  const target = new URL(provider.authorization_endpoint);
  for (const [name, value] of Object.entries({
    response_type: "code",
    client_id: settings.clientId,
    redirect_uri: settings.redirectUri,
    scope: "openid",
    state: pending.state,
    nonce: pending.nonce,
    code_challenge: challenge,
    code_challenge_method: "S256",
  }))
    target.searchParams.set(name, value);
  location.assign(target.toString());
}

function claimsOf(token: string): Record<string, unknown> {
  const part = token.split(".")[1] ?? "";
  const json = atob(part.replace(/-/g, "+").replace(/_/g, "/"));
  return JSON.parse(new TextDecoder().decode(Uint8Array.from(json, (c) => c.charCodeAt(0))));
}

/**
 * Completes the sign-in at the redirect URI: checks the state, trades the code and the PKCE verifier for
 * the ID token, checks its nonce and audience, and keeps it. The server checks its signature on every call.
 * Answers where the person was going.
 */
export async function finishSignIn(): Promise<string> {
  const settings = signInSettings();
  const params = new URLSearchParams(location.search);
  const stored = sessionStorage.getItem(pendingKey);
  // A pending sign-in is used once, whatever happens next.
  sessionStorage.removeItem(pendingKey);
  if (!settings) throw new Error("signing in is not set up");
  const refusal = params.get("error");
  if (refusal) throw new Error(params.get("error_description") ?? refusal);
  const pending = stored ? (JSON.parse(stored) as Pending) : undefined;
  const code = params.get("code");
  if (!pending || !code || params.get("state") !== pending.state) throw new Error("this sign-in was not started here");
  const provider = await discover(settings.issuer);
  const response = await fetch(provider.token_endpoint, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({
      grant_type: "authorization_code",
      code,
      redirect_uri: settings.redirectUri,
      client_id: settings.clientId,
      code_verifier: pending.verifier,
    }),
  });
  const answer = (await response.json().catch(() => ({}))) as Record<string, string | undefined>;
  const idToken = answer.id_token;
  if (!response.ok || !idToken) throw new Error(answer.error_description ?? answer.error ?? `HTTP ${response.status}`);
  const claims = claimsOf(idToken);
  const audience = Array.isArray(claims.aud) ? claims.aud : [claims.aud];
  if (claims.nonce !== pending.nonce || !audience.includes(settings.clientId))
    throw new Error("the identity provider answered a token for another sign-in");
  sessionStorage.setItem(tokenKey, idToken);
  return pending.returnTo;
}

/** The ID token while it is valid (by its own `exp`); a stale one is dropped. */
export function sessionToken(): string | undefined {
  const token = sessionStorage.getItem(tokenKey);
  if (!token) return undefined;
  try {
    const { exp } = claimsOf(token);
    if (typeof exp === "number" && exp * 1000 > Date.now()) return token;
  } catch {
    // Not a JWT: dropped below.
  }
  sessionStorage.removeItem(tokenKey);
  return undefined;
}

export const signOut = (): void => sessionStorage.removeItem(tokenKey);
