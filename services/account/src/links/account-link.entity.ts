import { defineEntity, type InferEntity, p } from "@mikro-orm/postgresql";

/** A partner's account (organization, environment, partner reference) secured by a human. */
export const AccountLink = defineEntity({
  name: "AccountLink",
  tableName: "account_link",
  properties: {
    id: p.uuid().primary(),
    organizationId: p.text(),
    environment: p.enum(["development", "production"] as const),
    /** Keyed hash of the partner's reference (see partner-reference.ts); the reference itself is never stored. */
    refHash: p.blob(),
    /** Null once the person deleted their account (the link row stays, unlinked, for the partner's list). */
    svcUserId: p.uuid().nullable(),
    /** What the partner holds instead of anything about the person: `OP_` and 12 base62 characters. */
    handle: p.text(),
    surfaceId: p.uuid().nullable(),
    securedAt: p.datetime(),
    status: p.enum(["active", "unlinked"] as const),
    unlinkedAt: p.datetime().nullable(),
    unlinkedBy: p.enum(["human", "platform"] as const).nullable(),
    unlinkReason: p.enum(["human", "platform", "credential_changed"] as const).nullable(),
  },
});
export type AccountLink = InferEntity<typeof AccountLink>;
