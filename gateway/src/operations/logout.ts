import { ok } from "../http/route.ts";
import { defineRoute } from "../services.ts";
import { failingAs500 } from "./gate-failures.ts";

/**
 * `POST /sdk/logout` (decisions.md): revokes an unused grant token of the caller's organization.
 * Flat under `data`: `{success: true, revoked}`, `revoked: false` when the token was already used,
 * expired or revoked. 403 for another organization's token.
 */
export const logoutRoute = defineRoute({
  operationId: "logout",
  method: "POST",
  path: "/sdk/logout",
  summary: "Revoke an unused grant token.",
  auth: { accepts: ["secret_key"] },
  input: {
    type: "object",
    properties: {
      anchor_grant_token: {
        type: "string",
        minLength: 1,
        maxLength: 200,
        description: "The grant token (svcs_…) to revoke.",
      },
    },
    required: ["anchor_grant_token"],
  },
  envelope: "flat",
  output: {
    type: "object",
    properties: { success: { type: "boolean" }, revoked: { type: "boolean" } },
    required: ["success", "revoked"],
  },
  async handle(input, { caller, services }) {
    const result = await failingAs500("the revoke failed; retry", () =>
      services.gate.logout({ caller, anchorGrantToken: input.anchor_grant_token }),
    );
    return ok({ success: true, revoked: result.revoked });
  },
});
