import { instant } from "../http/instant.ts";
import { ok } from "../http/route.ts";
import { defineRoute } from "../services.ts";
import { ceremonyAnswerFields, pageOriginField } from "./person-fields.ts";
import { relyingParty } from "./relying-party.ts";
import { sessionUserId } from "./session-user.ts";

/** App API: the signed-in person registers a passkey (WebAuthn registration through the account service). */
export const beginPasskeyRegistrationRoute = defineRoute({
  operationId: "appBeginPasskeyRegistration",
  method: "POST",
  path: "/app/passkeys/begin-registration",
  summary: "Start registering a passkey for the signed-in person; answers the WebAuthn creation options.",
  auth: { accepts: ["user_session"] },
  input: { type: "object", properties: { origin: pageOriginField } },
  envelope: "nested",
  async handle(input, { caller, services }) {
    const begun = await services.account.beginPasskeyRegistration({
      svcUserId: sessionUserId(caller),
      ...relyingParty(services.publicOrigin, input.origin),
    });
    return ok({ ceremony_id: begun.ceremonyId, options: JSON.parse(begun.optionsJson) });
  },
});

export const finishPasskeyRegistrationRoute = defineRoute({
  operationId: "appFinishPasskeyRegistration",
  method: "POST",
  path: "/app/passkeys/finish-registration",
  summary: "Finish registering a passkey with the authenticator's RegistrationResponseJSON.",
  auth: { accepts: ["user_session"] },
  input: {
    type: "object",
    properties: ceremonyAnswerFields,
    required: ["ceremony_id", "response"],
  },
  envelope: "nested",
  async handle(input, { services }) {
    const finished = await services.account.finishPasskeyRegistration({
      ceremonyId: input.ceremony_id,
      responseJson: JSON.stringify(input.response),
    });
    return ok({ credential_id: finished.credentialId });
  },
});

/** App API: the phone registers itself for pushes. */
export const registerDeviceRoute = defineRoute({
  operationId: "appRegisterDevice",
  method: "POST",
  path: "/app/devices",
  summary: "Register the signed-in person's phone to receive pushed requests.",
  auth: { accepts: ["user_session"] },
  input: {
    type: "object",
    properties: {
      push_token: { type: "string", minLength: 1, maxLength: 4096 },
      platform: { type: "string", enum: ["ios", "android", "web"] },
    },
    required: ["push_token", "platform"],
  },
  envelope: "nested",
  async handle(input, { caller, services }) {
    const device = await services.account.registerDevice({
      svcUserId: sessionUserId(caller),
      pushToken: input.push_token,
      platform: input.platform,
    });
    return ok({ device_id: device.deviceId });
  },
});

/** App API: who the session belongs to (the person's own `svc_user_id`, which partners may pass back as a returning user). */
export const appMeRoute = defineRoute({
  operationId: "appMe",
  method: "GET",
  path: "/app/me",
  summary: "The signed-in person's svc_user_id.",
  auth: { accepts: ["user_session"] },
  input: { type: "object", properties: {} },
  envelope: "nested",
  async handle(_input, { caller }) {
    return ok({ svc_user_id: sessionUserId(caller) });
  },
});

export const listPasskeysRoute = defineRoute({
  operationId: "appListPasskeys",
  method: "GET",
  path: "/app/passkeys",
  summary: "The signed-in person's passkeys, newest first.",
  auth: { accepts: ["user_session"] },
  input: { type: "object", properties: {} },
  envelope: "nested",
  output: {
    type: "object",
    properties: {
      passkeys: {
        type: "array",
        items: {
          type: "object",
          properties: {
            passkey_id: { type: "string" },
            created_at: { type: "string", format: "date-time" },
            last_used_at: { type: "string", format: "date-time", nullable: true },
            transports: { type: "array", items: { type: "string" } },
          },
        },
      },
    },
  },
  async handle(_input, { caller, services }) {
    const { passkeys } = await services.account.listPasskeys({ svcUserId: sessionUserId(caller) });
    return ok({
      passkeys: passkeys.map((passkey) => ({
        passkey_id: passkey.passkeyId,
        created_at: instant(passkey.createdAt),
        last_used_at: instant(passkey.lastUsedAt),
        transports: passkey.transports,
      })),
    });
  },
});

export const removePasskeyRoute = defineRoute({
  operationId: "appRemovePasskey",
  method: "POST",
  path: "/app/passkeys/remove",
  summary: "Remove one of the signed-in person's passkeys. Not the person's: 404.",
  auth: { accepts: ["user_session"] },
  input: {
    type: "object",
    properties: { passkey_id: { type: "string", minLength: 1, maxLength: 1024, description: "As listed." } },
    required: ["passkey_id"],
  },
  envelope: "nested",
  output: { type: "object", properties: { removed: { type: "boolean" } } },
  async handle(input, { caller, services }) {
    await services.account.removePasskey({ svcUserId: sessionUserId(caller), passkeyId: input.passkey_id });
    return ok({ removed: true });
  },
});
