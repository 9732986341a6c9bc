/** The WebAuthn choices every ceremony of this service makes, in one place. */

/** EdDSA, ES256 and RS256: what platform authenticators and security keys use today. */
export const supportedAlgorithmIds = [-8, -7, -257];

/** The WebAuthn user handle of a human: the UTF-8 of its svc_user_id, base64url (no personal data). */
export const userHandleOf = (svcUserId: string): string => Buffer.from(svcUserId, "utf8").toString("base64url");
