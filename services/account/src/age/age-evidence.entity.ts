import { defineEntity, type InferEntity, p } from "@mikro-orm/postgresql";

/**
 * What is known of a human's age: a birth date (sandbox humans only), or a wallet credential's verdict
 * at one threshold with its issuer and how long it holds. The newest evidence that applies counts.
 */
export const AgeEvidence = defineEntity({
  name: "AgeEvidence",
  tableName: "age_evidence",
  properties: {
    id: p.bigint("number").primary().autoincrement(),
    svcUserId: p.uuid(),
    /** A calendar date, `YYYY-MM-DD`; sandbox evidence only. */
    birthDate: p.date().nullable(),
    /** "sandbox", "sd-jwt-vc" or "mdoc". */
    source: p.text(),
    issuer: p.text().nullable(),
    threshold: p.integer().nullable(),
    result: p.enum(["over", "under"] as const).nullable(),
    validUntil: p.datetime().nullable(),
    recordedAt: p.datetime(),
  },
});
export type AgeEvidence = InferEntity<typeof AgeEvidence>;
