import { defineEntity, type InferEntity, p } from "@mikro-orm/postgresql";

/** A birth date of a human and where it came from; the newest one counts. */
export const AgeEvidence = defineEntity({
  name: "AgeEvidence",
  tableName: "age_evidence",
  properties: {
    id: p.bigint("number").primary().autoincrement(),
    svcUserId: p.uuid(),
    /** A calendar date, `YYYY-MM-DD`. */
    birthDate: p.date(),
    /** For example "document" or "sandbox". */
    source: p.text(),
    recordedAt: p.datetime(),
  },
});
export type AgeEvidence = InferEntity<typeof AgeEvidence>;
