/** Input fields the person's side (app API and web flow) shares across its operations. */

export const requestIdField = { type: "string", pattern: "^req_[0-9a-f]{32}$" } as const;

export const flowSecretField = {
  type: "string",
  minLength: 1,
  maxLength: 100,
  description: "The flow secret from the web_url or deep_link.",
} as const;

export const pageOriginField = {
  type: "string",
  maxLength: 200,
  description: "The page's origin (web flow); ignored unless on the relying party's host.",
} as const;

/** A WebAuthn ceremony's id and the authenticator's JSON answer, as a finish step takes them. */
export const ceremonyAnswerFields = {
  ceremony_id: { type: "string", minLength: 1, maxLength: 100 },
  response: { type: "object", additionalProperties: true },
} as const;
