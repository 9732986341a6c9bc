import { corsAllowedHeaders, corsExposedHeaders, preflightMaxAgeSeconds, servesBrowsers } from "../cors.ts";
import type { Route } from "../route.ts";
import { requestNotReadResponses } from "./envelope-components.ts";
import { type Json, type OpenApiPart, ref } from "./part.ts";

/** CORS (`../cors.ts`): a preflight for each path browsers call, and the headers of their answers. */

const browserHeaders = {
  "Access-Control-Allow-Origin": ref("headers", "AccessControlAllowOrigin"),
  "Access-Control-Expose-Headers": ref("headers", "AccessControlExposeHeaders"),
  Vary: ref("headers", "VaryOrigin"),
};

/** The CORS preflight of a path whose operations take a site key or a grant token. */
function preflightOf(routes: readonly Route[]): Json {
  const methods = routes.map((route) => route.method).join(", ");
  const constant = (value: string) => ({ schema: { type: "string", const: value } });
  const [first] = routes;
  if (!first) throw new Error("a preflight is described for the routes of a path, and there are none");
  return {
    operationId: `${first.operationId}Preflight`,
    summary: "CORS preflight of a browser call with a site key or a grant token.",
    description:
      "Answered 204 for any `Origin` and any requested method and headers: a preflight carries no credential, so the actual request is judged by its credential, and the browser itself refuses a method or header the answer does not allow. Without an `Origin` the answer carries `Allow` alone. It is not rate-limited.",
    security: [],
    responses: {
      "204": {
        description: "The call may be tried from this origin.",
        headers: {
          Allow: constant(`${methods}, OPTIONS`),
          "Access-Control-Allow-Origin": { description: "The request's `Origin`.", schema: { type: "string" } },
          "Access-Control-Allow-Methods": constant(methods),
          "Access-Control-Allow-Headers": constant(corsAllowedHeaders.join(", ")),
          "Access-Control-Max-Age": constant(String(preflightMaxAgeSeconds)),
          Vary: ref("headers", "VaryOrigin"),
        },
      },
      ...requestNotReadResponses,
    },
  };
}

export const corsPart: OpenApiPart = {
  overview:
    "Browsers call with a site key from one of its allowed origins (CORS): those operations answer a preflight, and their answers name the origin and expose the RateLimit and deprecation headers.",
  components: {
    headers: {
      AccessControlAllowOrigin: {
        description:
          "The page's `Origin`, when a site key authenticated from one of its allowed origins, or a grant token authenticated (the page got it from create-session; also on a 400 or 403 after authentication).",
        schema: { type: "string" },
      },
      AccessControlExposeHeaders: {
        description: "Headers a page's script may read.",
        schema: { type: "string", const: corsExposedHeaders.join(", ") },
      },
      VaryOrigin: { description: "The answer depends on `Origin`.", schema: { type: "string", const: "Origin" } },
    },
  },
  paths: (routes) =>
    Object.fromEntries(
      [...Map.groupBy(routes.filter(servesBrowsers), (route) => route.path)].map(([path, browserRoutes]) => [
        path,
        { options: preflightOf(browserRoutes) },
      ]),
    ),
  operation: (route) => (servesBrowsers(route) ? { headers: browserHeaders } : {}),
};
