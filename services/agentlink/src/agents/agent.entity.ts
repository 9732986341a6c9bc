import { defineEntity, type InferEntity, p } from "@mikro-orm/postgresql";

/** A partner's registered agent, in one organization and environment. */
export const Agent = defineEntity({
  name: "Agent",
  tableName: "agent",
  properties: {
    id: p.uuid().primary(),
    organizationId: p.text(),
    environment: p.enum(["development", "production"] as const),
    /** The `<Name>` of its keys; unique per organization and environment. */
    name: p.text(),
    displayName: p.text(),
    avatarAsset: p.text().nullable(),
    /** The action categories it may propose. */
    categories: p.array(),
    callbackUrl: p.text().nullable(),
    /** The `whsec_` secret its callbacks are signed with, sealed (see callback-secret.ts); set with a callback URL. */
    callbackSecretSealed: p.blob().nullable(),
    status: p.enum(["active", "revoked"] as const),
    createdAt: p.datetime(),
    revokedAt: p.datetime().nullable(),
  },
});
export type Agent = InferEntity<typeof Agent>;

/** One key of an agent: only the keyed hash of its secret (see key-hash.ts). */
export const AgentKey = defineEntity({
  name: "AgentKey",
  tableName: "agent_key",
  properties: {
    id: p.uuid().primary(),
    agentId: p.uuid(),
    secretHash: p.blob(),
    createdAt: p.datetime(),
    /** Set on the older keys when a new one is issued: the end of the rotation overlap. */
    expiresAt: p.datetime().nullable(),
  },
});
export type AgentKey = InferEntity<typeof AgentKey>;
