import { defineEntity, type InferEntity, p } from "@mikro-orm/postgresql";

const cardStatuses = ["queued", "approved", "denied", "cancelled", "expired"] as const;
export type CardStatus = (typeof cardStatuses)[number];

/**
 * An agent's proposal to one person (spec "Agent proposal (card)"). The card's fields as the person sees
 * them are `canonicalCard` (summary title, detail, category, trusted account, Adaptive Card), exactly the
 * text `cardDigest` hashes; title and category are kept apart for events and listings.
 */
export const Card = defineEntity({
  name: "Card",
  tableName: "card",
  properties: {
    id: p.uuid().primary(),
    agentId: p.uuid(),
    /** The agent's uuid; unique per agent (the idempotency key). */
    requestId: p.uuid(),
    svcUserId: p.uuid(),
    summaryTitle: p.text(),
    category: p.text(),
    canonicalCard: p.text(),
    cardDigest: p.text(),
    status: p.enum(cardStatuses),
    ttlAt: p.datetime(),
    createdAt: p.datetime(),
    resolvedAt: p.datetime().nullable(),
  },
});
export type Card = InferEntity<typeof Card>;

/** One state change of a card: what, by whom (`agent:<id>`, `human:<id>`, `sweep`), when. */
export const CardAudit = defineEntity({
  name: "CardAudit",
  tableName: "card_audit",
  properties: {
    id: p.bigint().primary().autoincrement(),
    cardId: p.uuid(),
    action: p.text(),
    actor: p.text(),
    at: p.datetime(),
    detail: p.json<Record<string, unknown>>().nullable(),
  },
});
export type CardAudit = InferEntity<typeof CardAudit>;
