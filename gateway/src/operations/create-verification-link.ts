import type { JsonObject } from "@bufbuild/protobuf";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { GateType } from "@svc/proto/gate/v1/gate_pb.js";
import { ok } from "../http/route.ts";
import { defineRoute } from "../services.ts";
import { failingAs500 } from "./gate-failures.ts";
import { gateKeyField, gateRequired } from "./gate-key.ts";
import { requestLinks } from "./gate-links.ts";

export const gateTypeName = (type: GateType): string => (type === GateType.AGE ? "age" : "human");

/**
 * `POST /sdk/create-verification-link`: only a grant token, which gate consumes when it accepts the
 * call. 401 grant invalid, expired or used; 400 no Active gate with this key in the environment; 403
 * gate not allowed for the key; 409 the 409 rule; 500 could not be created.
 */
export const createVerificationLinkRoute = defineRoute({
  operationId: "createVerificationLink",
  method: "POST",
  path: "/sdk/create-verification-link",
  summary: "Create a verification request for a gate; the grant token is consumed when the call is accepted.",
  auth: { accepts: ["grant_token"] },
  input: {
    type: "object",
    properties: {
      gate: gateKeyField,
      user_email: {
        type: "string",
        maxLength: 320,
        deprecated: true,
        description: "Accepted and ignored; never stored.",
      },
      return_url: {
        type: "string",
        format: "uri",
        pattern: "^https?://",
        maxLength: 2048,
        description: "Where the web flow returns after verification, with the token (http or https).",
      },
      webhook_url: {
        type: "string",
        maxLength: 2048,
        description: "Reserved: endpoints are configured in the console.",
      },
      mode: {
        type: "string",
        enum: ["linked-account", "private"],
        description: "Default: private, or linked-account when svc_user_id is given.",
      },
      svc_user_id: {
        type: "string",
        format: "uuid",
        description: "A returning user: the request is pushed to their devices.",
      },
      partner_user_ref: {
        type: "string",
        minLength: 1,
        maxLength: 512,
        description: "The partner's own reference; hashed at rest, never returned.",
      },
      link_on_verify: { type: "boolean", deprecated: true, description: "Accepted, no effect since 3.0." },
      parent_request_id: {
        type: "string",
        pattern: "^req_[0-9a-f]{32}$",
        description: "The pre-check this request is the presence ceremony of.",
      },
      metadata: {
        type: "object",
        additionalProperties: true,
        description: "Echoed in gate webhooks; wins over create-session metadata.",
      },
      notarize: {
        type: "boolean",
        description: "Secure the account at this confirmation (old name: enroll), when the gate offers it.",
      },
    },
    required: ["gate"],
  },
  refuseMissing: gateRequired,
  envelope: "nested",
  output: {
    type: "object",
    properties: {
      request_id: { type: "string", pattern: "^req_[0-9a-f]{32}$" },
      deep_link: {
        type: "string",
        description: "Opens the request in the mobile app; holds the request's flow secret.",
      },
      web_url: { type: "string", description: "The web flow; the flow secret sits in the fragment." },
      qr_code_url: {
        type: "string",
        description: "An SVG image of deep_link (GET it, or show it in an img); as secret as deep_link, never cached.",
      },
      expires_at: { type: "string", format: "date-time" },
      pushed_to_devices: { type: "integer" },
      sdk_type: { type: "string", enum: ["signal", "presence"] },
      auth_mode: { type: "string", enum: ["linked-account", "private"] },
      gate: { type: "string" },
      organization: { type: "object", properties: { id: { type: "string" } } },
      gate_type: { type: "string", enum: ["human", "age"] },
      age_threshold: { type: "integer" },
    },
  },
  async handle(input, { services, idempotencyToken, grant }) {
    if (!grant) throw new Error("create-verification-link ran without a grant token");
    // Gate authenticates the grant token in this same call and answers whom it stands for.
    const link = await failingAs500("the request could not be created; retry", () =>
      services.gate.createVerificationLink({
        anchorGrantToken: grant.token,
        gate: input.gate,
        returnUrl: input.return_url ?? "",
        mode: input.mode ?? "",
        svcUserId: input.svc_user_id ?? "",
        partnerUserRef: input.partner_user_ref ?? "",
        parentRequestId: input.parent_request_id ?? "",
        metadata: input.metadata as JsonObject | undefined,
        notarize: input.notarize ?? false,
        // Gate dedupes on it in its own transaction: a retry whose first answer was lost gets that request.
        idempotencyToken: idempotencyToken ?? "",
      }),
    );
    grant.accepted(link.caller);
    // The person's open inboxes name this partner when gate tells them of the request: known by then, it costs that wake nothing.
    if (input.svc_user_id !== undefined) services.organizations.warm(link.organizationId);
    return ok({
      request_id: link.requestId,
      ...requestLinks(services.publicOrigin, link.requestId, link.flowSecret),
      expires_at: link.expiresAt ? timestampDate(link.expiresAt).toISOString() : null,
      pushed_to_devices: link.pushedToDevices,
      sdk_type: link.sdkType,
      auth_mode: link.authMode,
      gate: link.gate,
      organization: { id: link.organizationId },
      gate_type: gateTypeName(link.gateType),
      ...(link.ageThreshold !== undefined ? { age_threshold: link.ageThreshold } : {}),
    });
  },
});
