import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { OpenRequestResponse } from "@svc/proto/gate/v1/gate_pb.js";
import { ok, type Route } from "../http/route.ts";
import type { ObjectSchema } from "../http/schema.ts";
import { gateTypeName } from "../operations/create-verification-link.ts";
import { defineRoute, type GatewayServices } from "../services.ts";
import { presentationStep } from "./age-presentation.ts";
import { ceremonyAnswerFields, flowSecretField, pageOriginField, requestIdField } from "./person-fields.ts";
import { relyingParty } from "./relying-party.ts";
import { sessionUserId } from "./session-user.ts";

const requestStatus = {
  type: "string",
  description: "The request's status: pending, completed, failed or expired.",
} as const;
const returnUrl = {
  type: "string",
  description: "The partner's return_url, when the request has one: where the web flow sends the person back.",
} as const;
/** What decline and fail answer. */
const endedOutput = { type: "object", properties: { status: requestStatus, return_url: returnUrl } } as const;

const opened = (response: OpenRequestResponse) => ({
  request_id: response.requestId,
  status: response.status,
  gate: response.gate,
  gate_type: gateTypeName(response.gateType),
  ...(response.ageThreshold !== undefined ? { age_threshold: response.ageThreshold } : {}),
  organization: { id: response.organizationId },
  notarize_offered: response.notarizeOffered,
  auth_mode: response.authMode,
  ...(response.expiresAt ? { expires_at: timestampDate(response.expiresAt).toISOString() } : {}),
  ...(response.ceremonyId !== ""
    ? { ceremony_id: response.ceremonyId, options: JSON.parse(response.optionsJson) }
    : {}),
});

/**
 * The person's side of a verification request, twice: for the app (`/app/requests/…`, a signed-in user
 * session; the deep link's `t` optional when the request names the person) and for the web flow
 * (`/flow/requests/…`, no session; the flow secret `t` from the web_url is required).
 */
function requestRoutes(side: "app" | "flow"): Route<GatewayServices>[] {
  const app = side === "app";
  const auth = app ? ({ accepts: ["user_session"] } as const) : ({ accepts: [] } as const);
  const base = (extra: Record<string, unknown>, required: string[]): ObjectSchema => ({
    type: "object",
    properties: { request_id: requestIdField, t: flowSecretField, ...extra },
    required: ["request_id", ...(app ? [] : ["t"]), ...required],
  });
  const access = (input: { t?: string }, caller: { credentialId: string } | undefined) => ({
    flowSecret: input.t ?? "",
    svcUserId: app ? sessionUserId(caller) : "",
  });
  const prefix = app ? "app" : "flow";
  const id = (name: string) => `${prefix}${name}`;

  return [
    defineRoute({
      operationId: id("OpenRequest"),
      method: "POST",
      path: `/${prefix}/requests/open`,
      summary: "Open a verification request: what to show, and passkey assertion options bound to the request.",
      auth,
      ...(app ? {} : { idempotencyScope: "t" }),
      input: base({ origin: pageOriginField }, []) as {
        type: "object";
        properties: { request_id: typeof requestIdField; t: typeof flowSecretField; origin: typeof pageOriginField };
        required: ["request_id"];
      },
      envelope: "nested",
      output: {
        type: "object",
        properties: {
          request_id: { type: "string" },
          status: requestStatus,
          gate: { type: "string" },
          gate_type: { type: "string", enum: ["human", "age"] },
          age_threshold: { type: "integer", description: "On an Age Gate." },
          organization: { type: "object", properties: { id: { type: "string" } } },
          notarize_offered: { type: "boolean" },
          auth_mode: { type: "string" },
          expires_at: { type: "string", format: "date-time" },
          ceremony_id: { type: "string", description: "While pending: name it in confirm." },
          options: {
            type: "object",
            additionalProperties: true,
            description: "While pending: PublicKeyCredentialRequestOptionsJSON, bound to this request.",
          },
          age_presentation: {
            type: "object",
            additionalProperties: true,
            description: "On an Age Gate: needed, and while needed the wallet step to show first.",
          },
        },
      },
      async handle(input, { caller, services }) {
        const response = await services.gate.openRequest({
          requestId: input.request_id,
          access: access(input, caller),
          ...relyingParty(services.publicOrigin, input.origin),
        });
        return ok({
          ...opened(response),
          ...(await presentationStep(services, response, app ? sessionUserId(caller) : response.svcUserId)),
        });
      },
    }),
    defineRoute({
      operationId: id("ConfirmRequest"),
      method: "POST",
      path: `/${prefix}/requests/confirm`,
      summary:
        "Confirm the request (request_id) with the passkey assertion: open's ceremony_id and the browser's AuthenticationResponseJSON as response. An assertion signed without user verification fails the request with device_lock_required.",
      auth,
      ...(app ? {} : { idempotencyScope: "t" }),
      input: base(ceremonyAnswerFields, ["ceremony_id", "response"]) as {
        type: "object";
        properties: {
          request_id: typeof requestIdField;
          t: typeof flowSecretField;
          ceremony_id: { type: "string" };
          response: { type: "object"; additionalProperties: true };
        };
        required: ["request_id", "ceremony_id", "response"];
      },
      envelope: "nested",
      output: {
        type: "object",
        properties: {
          status: requestStatus,
          token: { type: "string", description: "The attestation token: on the web flow, once completed." },
          return_url: returnUrl,
        },
      },
      async handle(input, { caller, services }) {
        const result = await services.gate.confirmRequest({
          requestId: input.request_id,
          access: access(input, caller),
          ceremonyId: input.ceremony_id,
          responseJson: JSON.stringify(input.response),
        });
        return ok({
          status: result.status,
          ...(result.token !== undefined ? { token: result.token } : {}),
          ...(result.returnUrl !== "" ? { return_url: result.returnUrl } : {}),
        });
      },
    }),
    defineRoute({
      operationId: id("DeclineRequest"),
      method: "POST",
      path: `/${prefix}/requests/decline`,
      summary: "Decline the request (it fails with reason user_denied).",
      auth,
      ...(app ? {} : { idempotencyScope: "t" }),
      input: base({}, []) as {
        type: "object";
        properties: { request_id: typeof requestIdField; t: typeof flowSecretField };
        required: ["request_id"];
      },
      envelope: "nested",
      output: endedOutput,
      async handle(input, { caller, services }) {
        const result = await services.gate.declineRequest({
          requestId: input.request_id,
          access: access(input, caller),
        });
        return ok({ status: result.status, ...(result.returnUrl !== "" ? { return_url: result.returnUrl } : {}) });
      },
    }),
    defineRoute({
      operationId: id("ReportFailure"),
      method: "POST",
      path: `/${prefix}/requests/fail`,
      summary:
        "Report that the device could not run the ceremony: device_lock_required (the passkey prompt was refused and the browser has no user-verifying platform authenticator: no screen lock or biometric) or platform_declined (the browser cannot run it).",
      auth,
      ...(app ? {} : { idempotencyScope: "t" }),
      input: base({ reason: { type: "string", enum: ["device_lock_required", "platform_declined"] } }, ["reason"]) as {
        type: "object";
        properties: { request_id: typeof requestIdField; t: typeof flowSecretField; reason: { type: "string" } };
        required: ["request_id", "reason"];
      },
      envelope: "nested",
      output: endedOutput,
      async handle(input, { caller, services }) {
        const result = await services.gate.reportFailure({
          requestId: input.request_id,
          access: access(input, caller),
          reason: input.reason,
        });
        return ok({ status: result.status, ...(result.returnUrl !== "" ? { return_url: result.returnUrl } : {}) });
      },
    }),
  ];
}

export const appRequestRoutes = requestRoutes("app");
export const flowRequestRoutes = requestRoutes("flow");
