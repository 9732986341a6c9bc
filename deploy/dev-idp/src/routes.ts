import type { IncomingMessage, ServerResponse } from "node:http";
import type { AuthorizationCodes } from "./authorization-codes.ts";
import { clientId, type IdentityProvider } from "./identity-provider.ts";
import { languages, pickLanguage } from "./messages.ts";
import { pageStyle } from "./page-style.ts";

/** Every request body it reads is a short form or JSON object. */
export const bodyLimitBytes = 16 * 1024;
/** Where the web app receives the code (gateway/src/app/web-app.ts `signedInPath`). */
const signedInPath = "/app/signed-in";
const subjectForm = /^[\p{L}\p{N}._@+-]{1,100}$/u;
/** An identifier of this form is also the session's address, which this provider vouches for. */
const emailForm = /^[^@]+@[^@]+\.[^@]+$/;
const pkceChallengeForm = /^[A-Za-z0-9_-]{43}$/;
const pkceVerifierForm = /^[A-Za-z0-9._~-]{43,128}$/;

/** What an authorization request must carry; the form posts the same fields back with the subject. */
const requestFields = [
  "response_type",
  "client_id",
  "redirect_uri",
  "state",
  "code_challenge",
  "code_challenge_method",
  "nonce",
];

type AuthorizationRequest = {
  clientId: string;
  redirectUri: string;
  state: string;
  codeChallenge: string;
  nonce: string | undefined;
};

/** The authorize page's policy: its own stylesheet, no script, and a form whose redirect goes to the app. */
const pagePolicy = (appOrigin: string) =>
  `default-src 'none'; style-src 'self'; form-action 'self' ${appOrigin}; base-uri 'none'; frame-ancestors 'none'`;

interface Reply {
  status: number;
  headers: Record<string, string>;
  body: string;
}

const htmlEscapes: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };
const escapeHtml = (text: string): string => text.replace(/[&<>"']/g, (c) => htmlEscapes[c] ?? c);

const json = (status: number, body: unknown, headers: Record<string, string> = {}): Reply => ({
  status,
  headers: { "content-type": "application/json", "cache-control": "no-store", ...headers },
  body: JSON.stringify(body),
});

/**
 * The body as text, or `undefined` when it is longer than the limit: then the rest is read and dropped,
 * so the connection stays whole for the 413.
 */
function readBody(request: IncomingMessage): Promise<string | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let length = 0;
    request.on("data", (chunk: Buffer) => {
      length += chunk.length;
      if (length <= bodyLimitBytes) chunks.push(chunk);
    });
    request.once("end", () => resolve(length > bodyLimitBytes ? undefined : Buffer.concat(chunks).toString("utf8")));
    request.once("error", reject);
  });
}

/**
 * A minimal OpenID Connect provider for the web app's authorization code flow with PKCE (S256 only):
 * the discovery document, the key set, the authorize page (which says plainly what it is and signs in as
 * whatever identifier is typed), the token endpoint (code + verifier → ID token; an identifier that is an
 * e-mail address is also its verified `email`), and `/mint` for the gateway console's MintDevSession.
 * It knows one client, the web app (`svc-app`) at `appOrigin`, whose pages fetch the discovery document
 * and the token endpoint cross-origin.
 */
export function identityProviderHandler(options: {
  provider: IdentityProvider;
  codes: AuthorizationCodes;
  appOrigins: readonly string[];
}): (request: IncomingMessage, response: ServerResponse) => void {
  const { provider, codes, appOrigins } = options;
  const redirectUris = appOrigins.map((origin) => `${origin}${signedInPath}`);
  /** The web app's pages read its replies from any of its origins; other origins get no CORS grant. */
  const corsFor = (request: IncomingMessage): Record<string, string> => {
    const origin = request.headers.origin;
    return origin !== undefined && appOrigins.includes(origin)
      ? { "access-control-allow-origin": origin, vary: "origin" }
      : { vary: "origin" };
  };

  const checkRequest = (fields: URLSearchParams): AuthorizationRequest | string => {
    const one = (name: string) => {
      const values = fields.getAll(name);
      return values.length === 1 ? values[0] : undefined;
    };
    if (one("client_id") !== clientId) return `client_id must be ${clientId}`;
    const redirectUri = one("redirect_uri") ?? "";
    if (!redirectUris.includes(redirectUri)) return "redirect_uri is not one of the web app's";
    if (one("response_type") !== "code") return "response_type must be code";
    if (one("code_challenge_method") !== "S256") return "code_challenge_method must be S256";
    const codeChallenge = one("code_challenge") ?? "";
    if (!pkceChallengeForm.test(codeChallenge)) return "code_challenge must be a base64url SHA-256";
    const state = one("state") ?? "";
    if (state.length < 1 || state.length > 200) return "state must hold 1-200 characters";
    const nonce = one("nonce");
    if (nonce !== undefined && (nonce.length < 1 || nonce.length > 200)) return "nonce must hold 1-200 characters";
    return { clientId, redirectUri, state, codeChallenge, nonce };
  };

  const authorizePage = (
    status: number,
    acceptLanguage: string | undefined,
    fields: URLSearchParams,
    problem?: string,
  ): Reply => {
    const language = pickLanguage(acceptLanguage);
    // The form's redirect goes back to the app's origin the request names (the first one when it names none).
    const redirectUri = fields.get("redirect_uri") ?? "";
    const appOrigin = appOrigins[Math.max(redirectUris.indexOf(redirectUri), 0)] ?? "";
    const t = languages[language];
    const hidden = requestFields
      .filter((name) => fields.has(name))
      .map((name) => `<input type="hidden" name="${name}" value="${escapeHtml(fields.get(name) ?? "")}">`)
      .join("\n");
    const body = problem
      ? `<p class="problem" role="alert">${escapeHtml(t.invalid.replace("{message}", problem))}</p>`
      : `<form method="post" action="/authorize">
${hidden}
<label for="subject">${escapeHtml(t.subjectLabel)}</label>
<input id="subject" name="subject" required maxlength="100" autocomplete="username" aria-describedby="subject-help" autofocus>
<p id="subject-help" class="hint">${escapeHtml(t.subjectHelp)}</p>
<button type="submit" class="primary">${escapeHtml(t.continue)}</button>
</form>`;
    return {
      status,
      headers: {
        "content-type": "text/html; charset=utf-8",
        "cache-control": "no-store",
        "content-security-policy": pagePolicy(appOrigin),
        "referrer-policy": "no-referrer",
        "x-content-type-options": "nosniff",
        "x-frame-options": "DENY",
        vary: "accept-language",
      },
      body: `<!doctype html>
<html lang="${language}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(t.title)}</title>
<link rel="stylesheet" href="/style.css">
</head>
<body>
<main class="narrow">
<h1>${escapeHtml(t.title)}</h1>
<p class="caution" role="note">${escapeHtml(t.notice)}</p>
${body}
</main>
</body>
</html>
`,
    };
  };

  const token = async (body: string, cors: Record<string, string>): Promise<Reply> => {
    const tokenError = (error: string, description: string) =>
      json(400, { error, error_description: description }, cors);
    const fields = new URLSearchParams(body);
    if (fields.get("grant_type") !== "authorization_code")
      return tokenError("unsupported_grant_type", "grant_type must be authorization_code");
    const verifier = fields.get("code_verifier") ?? "";
    if (!pkceVerifierForm.test(verifier)) return tokenError("invalid_request", "code_verifier is missing or malformed");
    const grant = codes.redeem({
      code: fields.get("code") ?? "",
      clientId: fields.get("client_id") ?? "",
      redirectUri: fields.get("redirect_uri") ?? "",
      codeVerifier: verifier,
    });
    if (!grant)
      return tokenError(
        "invalid_grant",
        "the code is unknown, used, expired, or not for this client, redirect and verifier",
      );
    const session = await provider.mint(grant.subject, {
      nonce: grant.nonce,
      email: emailForm.test(grant.subject) ? { address: grant.subject, verified: true } : undefined,
    });
    // The ID token is the app API's user session: the access token is the same JWT.
    return json(
      200,
      {
        id_token: session.token,
        access_token: session.token,
        token_type: "Bearer",
        expires_in: session.lifetimeSeconds,
      },
      { ...cors, pragma: "no-cache" },
    );
  };

  const mint = async (body: string): Promise<Reply> => {
    let request: unknown;
    try {
      request = JSON.parse(body);
    } catch {
      return json(400, { error: "the body is not JSON" });
    }
    const { subject, email = "", email_verified = false } = (request ?? {}) as Record<string, unknown>;
    if (typeof subject !== "string" || subject === "") return json(400, { error: "subject is required" });
    if (typeof email !== "string") return json(400, { error: "email must be a string" });
    if (typeof email_verified !== "boolean") return json(400, { error: "email_verified must be a boolean" });
    const session = await provider.mint(subject, {
      email: email === "" ? undefined : { address: email, verified: email_verified },
    });
    return json(200, { session_token: session.token, expires_at: session.expiresAt.toISOString() });
  };

  const route = async (request: IncomingMessage): Promise<Reply> => {
    const url = new URL(request.url ?? "/", provider.issuer);
    const cors = corsFor(request);
    const key = `${request.method} ${url.pathname}`;
    switch (key) {
      case "GET /readyz":
        return json(200, { ready: true });
      case "GET /.well-known/openid-configuration":
        return json(
          200,
          {
            issuer: provider.issuer,
            authorization_endpoint: `${provider.issuer}/authorize`,
            token_endpoint: `${provider.issuer}/token`,
            jwks_uri: `${provider.issuer}/.well-known/jwks.json`,
            response_types_supported: ["code"],
            grant_types_supported: ["authorization_code"],
            subject_types_supported: ["public"],
            id_token_signing_alg_values_supported: ["ES256"],
            code_challenge_methods_supported: ["S256"],
            token_endpoint_auth_methods_supported: ["none"],
            scopes_supported: ["openid"],
          },
          cors,
        );
      case "GET /style.css":
        return {
          status: 200,
          headers: {
            "content-type": "text/css; charset=utf-8",
            "cache-control": "no-store",
            "x-content-type-options": "nosniff",
          },
          body: pageStyle,
        };
      case "GET /.well-known/jwks.json":
        return json(200, provider.jwks(), cors);
      case "GET /authorize": {
        const checked = checkRequest(url.searchParams);
        return typeof checked === "string"
          ? authorizePage(400, request.headers["accept-language"], url.searchParams, checked)
          : authorizePage(200, request.headers["accept-language"], url.searchParams);
      }
      case "OPTIONS /token":
        return { status: 204, headers: { ...cors, "access-control-allow-methods": "POST" }, body: "" };
    }
    if (request.method !== "POST" || !["/authorize", "/token", "/mint"].includes(url.pathname))
      return json(404, { error: `no ${request.method} ${url.pathname} here` });
    const body = await readBody(request);
    if (body === undefined) return json(413, { error: `the body is larger than ${bodyLimitBytes} bytes` }, cors);
    if (url.pathname === "/token") return token(body, cors);
    if (url.pathname === "/mint") return mint(body);
    const fields = new URLSearchParams(body);
    const checked = checkRequest(fields);
    if (typeof checked === "string") return authorizePage(400, request.headers["accept-language"], fields, checked);
    const subject = (fields.get("subject") ?? "").trim();
    if (!subjectForm.test(subject))
      return authorizePage(
        400,
        request.headers["accept-language"],
        fields,
        "the identifier must be 1-100 letters, digits or . _ @ + -",
      );
    const back = new URL(checked.redirectUri);
    back.searchParams.set("code", codes.issue({ ...checked, subject }));
    back.searchParams.set("state", checked.state);
    back.searchParams.set("iss", provider.issuer);
    return {
      status: 303,
      headers: { location: back.toString(), "cache-control": "no-store", "referrer-policy": "no-referrer" },
      body: "",
    };
  };

  return (request, response) => {
    route(request).then(
      (reply) => {
        // A body no route reads is drained, so the connection stays usable.
        request.resume();
        response.writeHead(reply.status, reply.headers).end(reply.body);
      },
      (error: unknown) => {
        response.writeHead(500, { "content-type": "application/json" });
        response.end(JSON.stringify({ error: error instanceof Error ? error.message : String(error) }));
      },
    );
  };
}
