import { timestampDate } from "@bufbuild/protobuf/wkt";
import { GateType, type OpenRequestResponse } from "@svc/proto/gate/v1/gate_pb.js";
import { defineRoute, ok } from "../http/route.ts";
import type { GatewayServices } from "../services.ts";
import { flowSecretField, requestIdField } from "./person-fields.ts";
import { sessionUserId } from "./session-user.ts";

/**
 * The presentation step of a pending Age Gate request: none when the person's evidence already covers
 * the threshold (or a presentation for the request was accepted), otherwise the OpenID4VP
 * `request_uri` a wallet answers, before the passkey confirmation.
 */
export async function presentationStep(services: GatewayServices, opened: OpenRequestResponse, svcUserId: string) {
  if (opened.gateType !== GateType.AGE || opened.status !== "pending") return {};
  const step = await services.account.startAgePresentation({
    svcUserId,
    requestId: opened.requestId,
    threshold: opened.ageThreshold ?? 0,
    clientId: services.publicOrigin,
  });
  return {
    age_presentation: step.covered
      ? { needed: false }
      : {
          needed: true,
          presentation_id: step.presentationId,
          request_uri: step.requestUri,
          qr_code_url: `${step.requestUri}/qr.svg`,
          ...(step.expiresAt ? { expires_at: timestampDate(step.expiresAt).toISOString() } : {}),
        },
  };
}

/** `POST /app/age/prove`: proving one's age ahead of time, for the EU PID thresholds 12, 14, 16, 18, 21 and 65. */
export const proveAgeRoute = defineRoute({
  operationId: "appProveAge",
  method: "POST",
  path: "/app/age/prove",
  summary:
    "Start a wallet presentation of one's age outside any request: a request_uri for the wallet (OpenID4VP, direct_post).",
  auth: { accepts: ["user_session"] },
  input: { type: "object", properties: {} },
  envelope: "nested",
  async handle(_input, { caller, services }) {
    const step = await services.account.startAgePresentation({
      svcUserId: sessionUserId(caller),
      clientId: services.publicOrigin,
    });
    return ok({
      presentation_id: step.presentationId,
      request_uri: step.requestUri,
      qr_code_url: `${step.requestUri}/qr.svg`,
      ...(step.expiresAt ? { expires_at: timestampDate(step.expiresAt).toISOString() } : {}),
    });
  },
});

/**
 * `POST /flow/requests/presentation`: the web flow waits here for the wallet (often on another device).
 * The flow secret is checked by gate before account is asked, which reads it for the request it is bound to.
 */
export const flowPresentationStateRoute = defineRoute({
  operationId: "flowPresentationState",
  method: "POST",
  path: "/flow/requests/presentation",
  summary:
    "The presentation step's state (pending, accepted or expired) and the last refusal's reason, with the request's status.",
  auth: { accepts: [] },
  idempotencyScope: "t",
  input: {
    type: "object",
    properties: {
      request_id: requestIdField,
      t: flowSecretField,
      presentation_id: { type: "string", pattern: "^apr_[0-9a-f]{32}$" },
    },
    required: ["request_id", "t", "presentation_id"],
  },
  envelope: "nested",
  async handle(input, { services }) {
    const { status } = await services.gate.getRequestState({
      requestId: input.request_id,
      access: { flowSecret: input.t, svcUserId: "" },
    });
    const presentation = await services.account.getAgePresentation({
      presentationId: input.presentation_id,
      requestId: input.request_id,
    });
    return ok({
      status,
      state: presentation.state,
      ...(presentation.lastRefusal !== "" ? { last_refusal: presentation.lastRefusal } : {}),
    });
  },
});
