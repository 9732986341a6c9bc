import { fail, ok } from "../http/route.ts";
import { defineRoute } from "../services.ts";
import { ceremonyAnswerFields, flowSecretField, pageOriginField, requestIdField } from "./person-fields.ts";
import { relyingParty } from "./relying-party.ts";

/**
 * The web flow in private mode: a person without a passkey creates one, and with it a human that holds
 * no personal data. Only the holder of a pending request's flow secret may start it.
 */
export const flowBeginPasskeyRegistrationRoute = defineRoute({
  operationId: "flowBeginPasskeyRegistration",
  method: "POST",
  path: "/flow/passkeys/begin-registration",
  summary: "Web flow, private mode: start creating a passkey (and a human without personal data).",
  auth: { accepts: [] },
  idempotencyScope: "t",
  input: {
    type: "object",
    properties: { request_id: requestIdField, t: flowSecretField, origin: pageOriginField },
    required: ["request_id", "t"],
  },
  envelope: "nested",
  async handle(input, { services }) {
    const party = relyingParty(services.publicOrigin, input.origin);
    const opened = await services.gate.openRequest({
      requestId: input.request_id,
      access: { flowSecret: input.t, svcUserId: "" },
      ...party,
    });
    if (opened.status !== "pending") return fail(409, `the request is ${opened.status}, no longer pending`);
    if (opened.authMode !== "private")
      return fail(409, "this request is for a signed-in person; confirm it in the app");
    const begun = await services.account.beginPasskeyRegistration({ svcUserId: "", ...party });
    return ok({ ceremony_id: begun.ceremonyId, options: JSON.parse(begun.optionsJson) });
  },
});

export const flowFinishPasskeyRegistrationRoute = defineRoute({
  operationId: "flowFinishPasskeyRegistration",
  method: "POST",
  path: "/flow/passkeys/finish-registration",
  summary: "Web flow, private mode: finish creating the passkey.",
  auth: { accepts: [] },
  // The single-use ceremony is the only secret this call carries.
  idempotencyScope: "ceremony_id",
  input: {
    type: "object",
    properties: ceremonyAnswerFields,
    required: ["ceremony_id", "response"],
  },
  envelope: "nested",
  async handle(input, { services }) {
    await services.account.finishPasskeyRegistration({
      ceremonyId: input.ceremony_id,
      responseJson: JSON.stringify(input.response),
    });
    return ok({ registered: true });
  },
});
