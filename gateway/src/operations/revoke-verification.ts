import { fail, ok } from "../http/route.ts";
import { defineRoute } from "../services.ts";
import { failingAs500 } from "./gate-failures.ts";
import { gateKeyField, gateRequired } from "./gate-key.ts";

/**
 * `POST /sdk/revoke-verification`: ends exactly the pending requests that would block a new one (the
 * 409 rule); `revoked_count` 0 is a success. 400 without `partner_user_id` or without an Active gate.
 */
export const revokeVerificationRoute = defineRoute({
  operationId: "revokeVerification",
  method: "POST",
  path: "/sdk/revoke-verification",
  summary: "End the user's pending requests for a gate, so that a new one can be created.",
  auth: { accepts: ["secret_key", "site_key"] },
  input: {
    type: "object",
    properties: {
      gate: gateKeyField,
      partner_user_id: {
        type: "string",
        maxLength: 512,
        description: "The user's reference: the partner_user_ref, else the session's partner_user_id.",
      },
      user_email: { type: "string", maxLength: 320, deprecated: true, description: "Accepted and ignored." },
    },
    required: ["gate"],
  },
  refuseMissing: gateRequired,
  envelope: "nested",
  output: {
    type: "object",
    properties: { success: { type: "boolean" }, revoked_count: { type: "integer" }, message: { type: "string" } },
  },
  async handle(input, { caller, credential, services }) {
    const partnerUserId = input.partner_user_id;
    if (!partnerUserId) return fail(400, "partner_user_id is required");
    const result = await failingAs500("the revoke failed; retry", () =>
      services.gate.revokeVerification({
        caller,
        gate: input.gate,
        partnerUserId,
        allowedGates: [...(credential?.allowedGates ?? [])],
      }),
    );
    const count = result.revokedCount;
    return ok({
      success: true,
      revoked_count: count,
      message:
        count === 0 ? "no pending request to revoke" : `revoked ${count} pending request${count === 1 ? "" : "s"}`,
    });
  },
});
