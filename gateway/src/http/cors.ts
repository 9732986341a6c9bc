import type { IncomingHttpHeaders } from "node:http";
import type { AuthenticatedCredential } from "./credential.ts";
import type { Route } from "./route.ts";

/**
 * CORS for browser calls with a site key. Every credential travels in `Authorization`, never in a
 * cookie, so nothing here sends `Access-Control-Allow-Credentials`: a page reads an answer only when
 * the key it presented allows the page's origin.
 */

/** Request headers a page may send: the credential, the JSON body's type, the spec's opt-in and a retry's key. */
export const corsAllowedHeaders = [
  "Authorization",
  "Content-Type",
  "x-svc-include-ratelimit",
  "Idempotency-Key",
] as const;

/** Response headers a script may read beyond the safelisted ones: rate limits, the rename window, a replay. */
export const corsExposedHeaders = [
  "RateLimit",
  "RateLimit-Policy",
  "Deprecation",
  "Sunset",
  "Link",
  "Idempotent-Replayed",
] as const;

/** How long a browser may reuse a preflight answer; Chromium caps it at two hours. */
export const preflightMaxAgeSeconds = 7200;

/**
 * Browsers may call a route with a site key, and create-verification-link with the grant token a page
 * got from create-session (the widget's flow): API keys belong on servers.
 */
export const servesBrowsers = (route: Route): boolean =>
  route.auth.accepts.includes("site_key") || route.auth.accepts.includes("grant_token");

const requestOrigin = (headers: IncomingHttpHeaders): string | undefined =>
  typeof headers.origin === "string" ? headers.origin : undefined;

/**
 * The answer to a preflight (`OPTIONS`) of a path whose `methods` take a site key. A preflight carries
 * no credential, so it cannot know the key's origins: it allows any origin to try, and the actual
 * request is then judged by its key.
 */
export function preflightHeaders(methods: readonly string[], headers: IncomingHttpHeaders): Record<string, string> {
  const allow = { allow: [...methods, "OPTIONS"].join(", ") };
  const origin = requestOrigin(headers);
  if (origin === undefined) return allow;
  return {
    ...allow,
    "access-control-allow-origin": origin,
    "access-control-allow-methods": methods.join(", "),
    "access-control-allow-headers": corsAllowedHeaders.join(", "),
    "access-control-max-age": String(preflightMaxAgeSeconds),
    vary: "Origin",
  };
}

/**
 * What an actual response adds for a browser. With a site key: the page's origin, which authentication
 * has checked against the key's allowed origins. With a grant token: the page's origin as sent, since
 * the token is a single-use bearer the partner handed to that page (whoever holds it could spend it from
 * anywhere; CORS would protect nothing), and no cookie ever authenticates here. Anything else (an API
 * key, a refused credential or origin, a request refused before authentication) gets nothing, so a page
 * on another origin can read no answer of the API.
 */
export function corsResponseHeaders(
  credential: AuthenticatedCredential | undefined,
  headers: IncomingHttpHeaders,
): Record<string, string> {
  const origin =
    credential?.kind === "site_key"
      ? credential.origin
      : credential?.kind === "grant_token"
        ? requestOrigin(headers)
        : undefined;
  if (origin === undefined) return {};
  return {
    "access-control-allow-origin": origin,
    "access-control-expose-headers": corsExposedHeaders.join(", "),
    vary: "Origin",
  };
}
