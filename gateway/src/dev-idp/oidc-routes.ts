import { format as fill, languages, pickLanguage } from "../../web-app/src/messages.ts";
import { escapeHtml, pageHeaders } from "../app/page-headers.ts";
import { jsonReply, type RawReply, type RawRoute } from "../http/raw-route.ts";
import type { AuthorizationCodes } from "./authorization-codes.ts";
import { type DevIdentityProvider, devClientId, devIdpJwksPath, devIdpPath } from "./dev-identity-provider.ts";

const authorizePath = `${devIdpPath}/authorize`;
const tokenPath = `${devIdpPath}/token`;
/** The same stylesheet as the web app's. */
const stylesheet = "/app/assets/style.css";
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

/**
 * The development identity provider as a minimal OpenID Connect provider, for the web app's
 * authorization code flow with PKCE (S256 only): the discovery document, the key set, the authorize page
 * (which says plainly what it is and signs in as whatever identifier is typed), and the token endpoint
 * (code + verifier → ID token; an identifier that is an e-mail address is also its verified `email`). It knows one client, the web app (`svc-app`), and only its redirect URIs.
 */
export function devIdpRoutes(options: {
  devIdp: DevIdentityProvider;
  codes: AuthorizationCodes;
  redirectUris: readonly string[];
}): RawRoute[] {
  const { devIdp, codes, redirectUris } = options;

  const checkRequest = (fields: URLSearchParams): AuthorizationRequest | string => {
    const one = (name: string) => {
      const values = fields.getAll(name);
      return values.length === 1 ? values[0] : undefined;
    };
    if (one("client_id") !== devClientId) return `client_id must be ${devClientId}`;
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
    return { clientId: devClientId, redirectUri, state, codeChallenge, nonce };
  };

  const authorizePage = (
    status: number,
    headers: { "accept-language"?: string | undefined },
    fields: URLSearchParams,
    problem?: string,
  ): RawReply => {
    const language = pickLanguage(headers["accept-language"]);
    const t = languages[language];
    const hidden = requestFields
      .filter((name) => fields.has(name))
      .map((name) => `<input type="hidden" name="${name}" value="${escapeHtml(fields.get(name) ?? "")}">`)
      .join("\n");
    const body = problem
      ? `<p class="problem" role="alert">${escapeHtml(fill(t.devIdpInvalid, { message: problem }))}</p>`
      : `<form method="post" action="${authorizePath}">
${hidden}
<label for="subject">${escapeHtml(t.devIdpSubjectLabel)}</label>
<input id="subject" name="subject" required maxlength="100" autocomplete="username" aria-describedby="subject-help" autofocus>
<p id="subject-help" class="hint">${escapeHtml(t.devIdpSubjectHelp)}</p>
<button type="submit" class="primary">${escapeHtml(t.devIdpContinue)}</button>
</form>`;
    return {
      status,
      headers: pageHeaders("text/html; charset=utf-8"),
      body: `<!doctype html>
<html lang="${language}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(t.devIdpTitle)}</title>
<link rel="stylesheet" href="${stylesheet}">
</head>
<body>
<main class="narrow">
<h1>${escapeHtml(t.devIdpTitle)}</h1>
<p class="caution" role="note">${escapeHtml(t.devIdpNotice)}</p>
${body}
</main>
</body>
</html>
`,
    };
  };

  const tokenError = (error: string, description: string) =>
    jsonReply(400, { error, error_description: description }, { "cache-control": "no-store" });

  return [
    {
      path: `${devIdpPath}/.well-known/openid-configuration`,
      method: "GET",
      serve: () =>
        jsonReply(200, {
          issuer: devIdp.issuer,
          authorization_endpoint: `${devIdp.issuer}/authorize`,
          token_endpoint: `${devIdp.issuer}/token`,
          jwks_uri: `${devIdp.issuer}/.well-known/jwks.json`,
          response_types_supported: ["code"],
          grant_types_supported: ["authorization_code"],
          subject_types_supported: ["public"],
          id_token_signing_alg_values_supported: ["ES256"],
          code_challenge_methods_supported: ["S256"],
          token_endpoint_auth_methods_supported: ["none"],
          scopes_supported: ["openid"],
        }),
    },
    { path: devIdpJwksPath, method: "GET", serve: () => jsonReply(200, devIdp.jwks()) },
    {
      path: authorizePath,
      method: "GET",
      serve: ({ url, headers }) => {
        const checked = checkRequest(url.searchParams);
        return authorizePage(
          typeof checked === "string" ? 400 : 200,
          headers,
          url.searchParams,
          typeof checked === "string" ? checked : undefined,
        );
      },
    },
    {
      path: authorizePath,
      method: "POST",
      async serve({ headers, body }) {
        const fields = new URLSearchParams(body);
        const checked = checkRequest(fields);
        if (typeof checked === "string") return authorizePage(400, headers, fields, checked);
        const subject = (fields.get("subject") ?? "").trim();
        if (!subjectForm.test(subject))
          return authorizePage(400, headers, fields, "the identifier must be 1-100 letters, digits or . _ @ + -");
        const code = await codes.issue({ ...checked, subject });
        const back = new URL(checked.redirectUri);
        back.searchParams.set("code", code);
        back.searchParams.set("state", checked.state);
        back.searchParams.set("iss", devIdp.issuer);
        return {
          status: 303,
          headers: { location: back.toString(), "cache-control": "no-store", "referrer-policy": "no-referrer" },
          body: "",
        };
      },
    },
    {
      path: tokenPath,
      method: "POST",
      async serve({ body }) {
        const fields = new URLSearchParams(body);
        if (fields.get("grant_type") !== "authorization_code")
          return tokenError("unsupported_grant_type", "grant_type must be authorization_code");
        const verifier = fields.get("code_verifier") ?? "";
        if (!pkceVerifierForm.test(verifier))
          return tokenError("invalid_request", "code_verifier is missing or malformed");
        const grant = await codes.redeem({
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
        const session = await devIdp.mint(grant.subject, {
          nonce: grant.nonce,
          email: emailForm.test(grant.subject) ? { address: grant.subject, verified: true } : undefined,
        });
        // The ID token is the app API's user session: the access token is the same JWT.
        return jsonReply(
          200,
          {
            id_token: session.token,
            access_token: session.token,
            token_type: "Bearer",
            expires_in: session.lifetimeSeconds,
          },
          { "cache-control": "no-store", pragma: "no-cache" },
        );
      },
    },
  ];
}
