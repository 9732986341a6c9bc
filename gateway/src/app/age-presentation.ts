import { timestampDate } from "@bufbuild/protobuf/wkt";
import { GateType, type OpenRequestResponse } from "@svc/proto/gate/v1/gate_pb.js";
import { ok } from "../http/route.ts";
import type { GatewayServices } from "../services.ts";
import { defineRoute } from "../services.ts";
import { flowSecretField, requestIdField } from "./person-fields.ts";
import { sessionUserId } from "./session-user.ts";

const presentationIdField = { type: "string", pattern: "^apr_[0-9a-f]{32}$" } as const;

/**
 * The presentation step of a pending Age Gate request: none when the person's evidence already covers
 * the threshold (or a presentation for the request was accepted), otherwise the OpenID4VP
 * `request_uri` a wallet answers, before the passkey confirmation. `svcUserId` is whose evidence counts:
 * the signed-in person in the app; in the web flow the person the request names (gate's answer, never
 * passed on to the page), or none for a request that names nobody.
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
      presentation_id: presentationIdField,
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

/** The DC API protocol of a signed OpenID4VP 1.0 request in JWS compact serialization (Appendix A.1). */
const dcApiProtocol = "openid4vp-v1-signed";

/** What the wallet answered through the DC API: the `DigitalCredential`'s `data`, unparsed here. */
const dcApiDataField = { type: "object", additionalProperties: true } as const;

/**
 * The shared part of the DC API routes, the web flow's and the app's alike, once the caller may use the
 * presentation: the signed request for the gateway's public origin (the page's, which the browser
 * passes to the wallet as the origin it binds the answer to).
 */
async function dcApiRequest(services: GatewayServices, presentationId: string) {
  const { requestObject } = await services.account.getAgePresentationRequestObject({
    presentationId,
    dcApiOrigin: services.publicOrigin,
  });
  return { protocol: dcApiProtocol, data: { request: requestObject } };
}

/**
 * The shared part of sending on the wallet's DC API answer: verified against the public origin; a
 * refusal is an answer with its reason, stores nothing, and leaves the step pending.
 */
async function dcApiAnswer(services: GatewayServices, presentationId: string, answer: Record<string, unknown>) {
  const data = answer as { vp_token?: unknown; error?: unknown };
  if (data.vp_token === undefined)
    return { accepted: false, reason: typeof data.error === "string" ? "wallet_error" : "malformed_presentation" };
  const outcome = await services.account.submitAgePresentation({
    presentationId,
    vpToken: JSON.stringify(data.vp_token),
    dcApiOrigin: services.publicOrigin,
  });
  return outcome.accepted ? { accepted: true } : { accepted: false, reason: outcome.reason };
}

const dcApiInput = {
  request_id: requestIdField,
  t: flowSecretField,
  presentation_id: presentationIdField,
} as const;

/**
 * The flow secret opens the request (checked by gate), and the presentation must be that request's
 * (account answers not found otherwise), before anything of the presentation is read or answered.
 */
async function requirePresentationOfFlow(
  services: GatewayServices,
  input: { request_id: string; t: string; presentation_id: string },
) {
  await services.gate.getRequestState({ requestId: input.request_id, access: { flowSecret: input.t, svcUserId: "" } });
  return services.account.getAgePresentation({ presentationId: input.presentation_id, requestId: input.request_id });
}

/**
 * `POST /flow/requests/presentation/dc-api-request`: the same-device wallet through the Digital
 * Credentials API. The page passes `{protocol, data: {request}}` to `navigator.credentials.get({digital})`;
 * the wallet answers to the page, bound to this origin.
 */
export const flowDcApiRequestRoute = defineRoute({
  operationId: "flowPresentationDcApiRequest",
  method: "POST",
  path: "/flow/requests/presentation/dc-api-request",
  summary:
    "The presentation step's signed request for the Digital Credentials API (OpenID4VP 1.0 Appendix A: response_mode dc_api, expected_origins this origin).",
  auth: { accepts: [] },
  idempotencyScope: "t",
  input: { type: "object", properties: dcApiInput, required: ["request_id", "t", "presentation_id"] },
  envelope: "nested",
  async handle(input, { services }) {
    await requirePresentationOfFlow(services, input);
    return ok(await dcApiRequest(services, input.presentation_id));
  },
});

/**
 * `POST /flow/requests/presentation/dc-api-response`: the page sends on what the wallet answered
 * through the DC API (the `DigitalCredential`'s `data`).
 */
export const flowDcApiResponseRoute = defineRoute({
  operationId: "flowPresentationDcApiResponse",
  method: "POST",
  path: "/flow/requests/presentation/dc-api-response",
  summary:
    "Send the wallet's Digital Credentials API answer (its data: {vp_token}) for verification: accepted, or refused with the reason.",
  auth: { accepts: [] },
  idempotencyScope: "t",
  input: {
    type: "object",
    properties: { ...dcApiInput, data: dcApiDataField },
    required: ["request_id", "t", "presentation_id", "data"],
  },
  envelope: "nested",
  async handle(input, { services }) {
    await requirePresentationOfFlow(services, input);
    return ok(await dcApiAnswer(services, input.presentation_id, input.data as Record<string, unknown>));
  },
});

/** The signed-in person's own presentation: account answers not found for anyone else's. */
function requireOwnPresentation(services: GatewayServices, svcUserId: string, presentationId: string) {
  return services.account.getAgePresentation({ presentationId, svcUserId, requestId: "" });
}

/** `POST /app/age/presentation`: the app waits here for the wallet of an ahead-of-time proof (often on another device). */
export const appPresentationStateRoute = defineRoute({
  operationId: "appAgePresentationState",
  method: "POST",
  path: "/app/age/presentation",
  summary:
    "The state (pending, accepted or expired) of one's ahead-of-time presentation and the last refusal's reason.",
  auth: { accepts: ["user_session"] },
  input: { type: "object", properties: { presentation_id: presentationIdField }, required: ["presentation_id"] },
  envelope: "nested",
  async handle(input, { caller, services }) {
    const presentation = await requireOwnPresentation(services, sessionUserId(caller), input.presentation_id);
    return ok({
      state: presentation.state,
      ...(presentation.lastRefusal !== "" ? { last_refusal: presentation.lastRefusal } : {}),
    });
  },
});

/** `POST /app/age/dc-api-request`: the ahead-of-time proof with a wallet on the same device (Digital Credentials API). */
export const appDcApiRequestRoute = defineRoute({
  operationId: "appAgeDcApiRequest",
  method: "POST",
  path: "/app/age/dc-api-request",
  summary:
    "The ahead-of-time presentation's signed request for the Digital Credentials API (OpenID4VP 1.0 Appendix A: response_mode dc_api, expected_origins this origin).",
  auth: { accepts: ["user_session"] },
  input: { type: "object", properties: { presentation_id: presentationIdField }, required: ["presentation_id"] },
  envelope: "nested",
  async handle(input, { caller, services }) {
    await requireOwnPresentation(services, sessionUserId(caller), input.presentation_id);
    return ok(await dcApiRequest(services, input.presentation_id));
  },
});

/** `POST /app/age/dc-api-response`: the web app sends on the wallet's DC API answer of an ahead-of-time proof. */
export const appDcApiResponseRoute = defineRoute({
  operationId: "appAgeDcApiResponse",
  method: "POST",
  path: "/app/age/dc-api-response",
  summary:
    "Send the wallet's Digital Credentials API answer (its data: {vp_token}) of an ahead-of-time proof: accepted, or refused with the reason.",
  auth: { accepts: ["user_session"] },
  input: {
    type: "object",
    properties: { presentation_id: presentationIdField, data: dcApiDataField },
    required: ["presentation_id", "data"],
  },
  envelope: "nested",
  async handle(input, { caller, services }) {
    await requireOwnPresentation(services, sessionUserId(caller), input.presentation_id);
    return ok(await dcApiAnswer(services, input.presentation_id, input.data as Record<string, unknown>));
  },
});
