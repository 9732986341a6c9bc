import { defineEntity, p } from "@mikro-orm/postgresql";

/** The replay ledger: one row per attestation token that was checked and found otherwise valid. */
export const TokenCheck = defineEntity({
  name: "TokenCheck",
  tableName: "token_check",
  properties: {
    /** SHA-256 of the token's payload segment. */
    payloadHash: p.blob().primary(),
    checkedAt: p.datetime(),
    /** The token's own expiry: after it (and a margin) the row can go. */
    expiresAt: p.datetime(),
  },
});
