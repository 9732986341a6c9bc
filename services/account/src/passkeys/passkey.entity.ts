import { defineEntity, type InferEntity, p } from "@mikro-orm/postgresql";

/** A WebAuthn credential of a human. */
export const Passkey = defineEntity({
  name: "Passkey",
  tableName: "passkey",
  properties: {
    /** base64url, as WebAuthn's JSON forms carry it. */
    credentialId: p.text().primary(),
    svcUserId: p.uuid(),
    /** Null for a sandbox passkey, whose software authenticator answers for any relying party. */
    rpId: p.text().nullable(),
    /** The COSE_Key from the attested credential data, exactly as the authenticator sent it. */
    publicKey: p.blob(),
    /** The highest signature counter seen; an assertion must report a higher one unless both are 0. */
    signCount: p.bigint("number"),
    transports: p.array(),
    backedUp: p.boolean(),
    createdAt: p.datetime(),
    lastUsedAt: p.datetime().nullable(),
  },
});
export type Passkey = InferEntity<typeof Passkey>;

/** One registration or assertion challenge: single use, expiring, and for assertions bound to what it confirms. */
export const PasskeyCeremony = defineEntity({
  name: "PasskeyCeremony",
  tableName: "passkey_ceremony",
  properties: {
    id: p.uuid().primary(),
    kind: p.enum(["registration", "assertion"] as const),
    /** base64url, as sent in the options. */
    challenge: p.text().unique(),
    /** The human named by the caller, or in a private-mode registration the id the new human will get. */
    svcUserId: p.uuid().nullable(),
    createsHuman: p.boolean(),
    rpId: p.text(),
    origin: p.text(),
    binding: p.text().nullable(),
    createdAt: p.datetime(),
    expiresAt: p.datetime(),
    consumedAt: p.datetime().nullable(),
  },
});
export type PasskeyCeremony = InferEntity<typeof PasskeyCeremony>;
