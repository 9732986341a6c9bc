import { defineEntity, type InferEntity, p } from "@mikro-orm/postgresql";

/**
 * A partner's webhook receiver: it belongs to the organization and receives both environments. Or, with
 * `agentId`, an agent's callback: it receives that agent's resolutions only, and no console operation sees it.
 */
export const Endpoint = defineEntity({
  name: "Endpoint",
  tableName: "endpoints",
  properties: {
    id: p.text().primary(),
    organizationId: p.text(),
    url: p.text(),
    /** Webhook types it receives; empty receives every type. */
    types: p.array(),
    status: p.enum(["enabled", "disabled"] as const),
    disabledReason: p.text().nullable(),
    disabledAt: p.datetime().nullable(),
    /** First failed attempt since the last success; auto-disable counts from here. */
    failingSince: p.datetime().nullable(),
    /** Bumped on every rotation, so a worker's cached signing keys know when they are stale. */
    secretVersion: p.integer(),
    /** The current secret, sealed with AES-256-GCM (see endpoint-secret.ts). */
    secretSealed: p.blob(),
    /** The secret before the last rotation, which keeps signing until previousSecretExpiresAt. */
    previousSecretSealed: p.blob().nullable(),
    previousSecretExpiresAt: p.datetime().nullable(),
    createdAt: p.datetime(),
    /** Set on an agent's callback endpoint (id `cb_<agent id>`), kept to the agent's target by the consumer. */
    agentId: p.text().nullable().unique(),
  },
});
export type Endpoint = InferEntity<typeof Endpoint>;
