import type { CredentialKindName } from "../http/credential.ts";
import type { Json } from "../http/openapi/part.ts";

/** Each credential kind as a bearer security scheme of the OpenAPI document, with the form of its value. */
export const securitySchemes: Record<CredentialKindName, { name: string; scheme: Json }> = {
  secret_key: {
    name: "secretKey",
    scheme: {
      type: "http",
      scheme: "bearer",
      bearerFormat: "svc_dev_… or svc_production_… (also svc_prod_…)",
      description: "Secret API key, for server calls.",
    },
  },
  site_key: {
    name: "siteKey",
    scheme: {
      type: "http",
      scheme: "bearer",
      bearerFormat: "pk_test_… or pk_live_…",
      description:
        "Site key, for browser calls: the request must send an allowed `Origin`. Its answers carry `Access-Control-Allow-Origin` (that origin) only then; a refused key or origin gets its `data.error` without it, so the page's script cannot read it (a network error) while the key's owner sees it in the browser's developer tools.",
    },
  },
  grant_token: {
    name: "grantToken",
    scheme: {
      type: "http",
      scheme: "bearer",
      bearerFormat: "svcs_…",
      description: "Single-use grant token from create-session; lives 5 minutes.",
    },
  },
  agent_key: {
    name: "agentKey",
    scheme: {
      type: "http",
      scheme: "bearer",
      bearerFormat: "svc_agent_<Name>__<secret>",
      description: "Agent key, scoped to one agent and one environment.",
    },
  },
  user_session: {
    name: "userSession",
    scheme: {
      type: "http",
      scheme: "bearer",
      bearerFormat: "JWT",
      description: "Signed-in user session of the mobile app (identity-provider JWT).",
    },
  },
};
