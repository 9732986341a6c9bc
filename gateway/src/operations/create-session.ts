import type { JsonObject } from "@bufbuild/protobuf";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { ok } from "../http/route.ts";
import { defineRoute } from "../services.ts";
import { failingAs500 } from "./gate-failures.ts";

/**
 * `POST /sdk/create-session`: a single-use grant token for create-verification-link. Secret-key
 * problems are 401; site-key problems (unknown, revoked, no or a disallowed Origin) are 403.
 */
export const createSessionRoute = defineRoute({
  operationId: "createSession",
  method: "POST",
  path: "/sdk/create-session",
  summary: "Create a grant token (svcs_…, single use, five minutes) for one create-verification-link call.",
  auth: {
    accepts: ["secret_key", "site_key"],
    statusFor: { invalid_site_key: 403, revoked_site_key: 403, expired_site_key: 403 },
  },
  input: {
    type: "object",
    properties: {
      partner_user_id: {
        type: "string",
        maxLength: 512,
        description: "The partner's user reference, used for the 409 rule; hashed at rest.",
      },
      metadata: {
        type: "object",
        additionalProperties: true,
        description: "Echoed in gate webhooks (reserved keys dropped).",
      },
    },
  },
  envelope: "nested",
  output: {
    type: "object",
    properties: {
      anchor_grant_token: { type: "string", description: "svcs_…; single use, lives five minutes." },
      organization: { type: "object", properties: { id: { type: "string" } } },
      expires_at: { type: "string", format: "date-time" },
    },
  },
  async handle(input, { caller, credential, services }) {
    const session = await failingAs500("the grant could not be created; retry", () =>
      services.gate.createSession({
        caller,
        partnerUserId: input.partner_user_id ?? "",
        metadata: input.metadata as JsonObject | undefined,
        allowedGates: [...(credential?.allowedGates ?? [])],
      }),
    );
    return ok({
      anchor_grant_token: session.anchorGrantToken,
      organization: { id: session.organizationId },
      ...(session.expiresAt ? { expires_at: timestampDate(session.expiresAt).toISOString() } : {}),
    });
  },
});
