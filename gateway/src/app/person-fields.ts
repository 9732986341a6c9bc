/** Input fields the person's side (app API and web flow) shares across its operations. */

export const requestIdField = {
  type: "string",
  pattern: "^req_[0-9a-f]{32}$",
  description: "The verification request's id, from the web_url's or deep link's path.",
} as const;

export const flowSecretField = {
  type: "string",
  minLength: 1,
  maxLength: 100,
  description:
    "The flow secret from the web_url or deep_link (its fragment's t). Required on /flow/…; on /app/… only when the request does not name the signed-in person.",
} as const;

export const pageOriginField = {
  type: "string",
  maxLength: 200,
  description: "The page's origin (location.origin); ignored unless on the relying party's host.",
} as const;

/** A WebAuthn ceremony's id and the authenticator's JSON answer, as a finish step takes them. */
export const ceremonyAnswerFields = {
  ceremony_id: {
    type: "string",
    minLength: 1,
    maxLength: 100,
    description: "The ceremony_id the step that began the ceremony answered, with its options.",
  },
  response: {
    type: "object",
    additionalProperties: true,
    description:
      "The browser's answer, PublicKeyCredential.toJSON(): RegistrationResponseJSON for a registration, AuthenticationResponseJSON for an assertion.",
  },
} as const;
