import { defineEntity, type InferEntity, p } from "@mikro-orm/postgresql";

/** One event as the partner receives it; stored before the event is acknowledged on the stream. */
export const WebhookMessage = defineEntity({
  name: "WebhookMessage",
  tableName: "messages",
  properties: {
    /** Sent as webhook-id: the same for every attempt and every endpoint of this message. */
    id: p.text().primary(),
    /** Arrival order, which the list's newest-first ordering and paging follow. */
    seq: p.bigint().autoincrement(),
    organizationId: p.text(),
    /** The spec's deduplication key (the envelope's dedup_key); unique, so a re-published event adds nothing. */
    dedupKey: p.text().unique(),
    type: p.text(),
    environment: p.enum(["development", "production"] as const).nullable(),
    occurredAt: p.datetime().nullable(),
    /** The rendered JSON, byte for byte what is signed and sent. */
    body: p.blob(),
    receivedAt: p.datetime(),
    /** For an agents_ask resolution: the agent whose callback endpoint receives it, and the card. */
    agentId: p.text().nullable(),
    cardId: p.text().nullable(),
  },
});
export type WebhookMessage = InferEntity<typeof WebhookMessage>;

/** A message on its way to one endpoint: its status, its attempts and when the next one is due. */
export const Delivery = defineEntity({
  name: "Delivery",
  tableName: "deliveries",
  properties: {
    id: p.bigint().primary().autoincrement(),
    messageId: p.text(),
    endpointId: p.text(),
    status: p.enum(["pending", "delivered", "failed"] as const),
    /** Every attempt ever made, replays included; also fences a late result against a newer claim. */
    attempts: p.integer(),
    /** Attempts made in the current retry schedule; a replay starts a new schedule at 0. */
    scheduleStep: p.integer(),
    /** Set while pending; while an attempt runs it is pushed past the attempt's deadline (a lease). */
    nextAttemptAt: p.datetime().nullable(),
    lastAttemptAt: p.datetime().nullable(),
    lastStatusCode: p.integer().nullable(),
    lastError: p.text().nullable(),
    deliveredAt: p.datetime().nullable(),
    createdAt: p.datetime(),
  },
});
export type Delivery = InferEntity<typeof Delivery>;
