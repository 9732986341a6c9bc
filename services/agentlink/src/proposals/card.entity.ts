import type { JsonObject } from "@bufbuild/protobuf";
import { defineEntity, type InferEntity, p } from "@mikro-orm/postgresql";

const cardStatuses = ["queued", "approved", "denied", "cancelled", "expired"] as const;
export type CardStatus = (typeof cardStatuses)[number];

const personIdentifiers = ["opaque_id", "svc_user_id", "user_email"] as const;
export type PersonIdentifier = (typeof personIdentifiers)[number];

const verdicts = ["approve", "denied"] as const;
export type Verdict = (typeof verdicts)[number];

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
    /** Which identifier the agent named the person by: the proof's `sub` is the opaque_id only for `opaque_id`. */
    namedBy: p.enum(personIdentifiers),
    /** The trust layer's warnings (violations of severity warning), shown to the person as a caution. */
    warnings: p.json<JsonObject[]>(),
    verdict: p.enum(verdicts).nullable(),
    /** Shared by every card of one confirm; a repeat of that confirm finds its resolutions by it. */
    ceremonyId: p.uuid().nullable(),
    resolutionId: p.uuid().nullable(),
    /** The Proof of Resolution, for approved and denied cards only. */
    resolutionJwt: p.text().nullable(),
    /**
     * A card of the development environment: from when the sandbox sweep may answer it, should its person
     * be a sandbox human who answers (`confirmations/sandbox-answers.ts`); null for every other card.
     */
    sandboxAnswerAt: p.datetime().nullable(),
    /** A quorum card's thresholds (both set, or both null for a card to one person). */
    quorumApprove: p.smallint().nullable(),
    quorumDeny: p.smallint().nullable(),
    /** The inquire's trace context (W3C traceparent), which the card's resolution continues; null untraced. */
    traceContext: p.text().nullable(),
  },
});
export type Card = InferEntity<typeof Card>;

const methods = ["passkey", "sandbox"] as const;

/** One approver of a quorum card and their one decision (all four decision fields null until they decide). */
export const CardApprover = defineEntity({
  name: "CardApprover",
  tableName: "card_approver",
  properties: {
    cardId: p.uuid().primary(),
    svcUserId: p.uuid().primary(),
    /** Where the agent named them in `approvers`, from 0. */
    position: p.smallint(),
    verdict: p.enum(verdicts).nullable(),
    ceremonyId: p.uuid().nullable(),
    decidedAt: p.datetime().nullable(),
    amr: p.enum(methods).nullable(),
  },
});
export type CardApprover = InferEntity<typeof CardApprover>;

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
