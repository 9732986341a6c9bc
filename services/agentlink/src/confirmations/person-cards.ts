import type { EntityManager } from "@mikro-orm/postgresql";
import { Binding } from "../binding/binding.entity.ts";
import { Card, CardApprover } from "../proposals/card.entity.ts";
import { cardStateAt } from "../proposals/card-status.ts";
import { refuse } from "../refusal.ts";
import { type Decision, decisionsDocument } from "./decisions.ts";

/**
 * The person's queued cards, oldest first (the order they arrived in): the cards to them, and the quorum
 * cards that still wait on their decision; never another person's.
 */
export async function queuedCardsOf(em: EntityManager, svcUserId: string, now: Date): Promise<Card[]> {
  const asked = await em.find(CardApprover, { svcUserId, verdict: null }, { fields: ["cardId"] });
  return em.find(
    Card,
    {
      status: "queued",
      ttlAt: { $gt: now },
      $or: [{ svcUserId, quorumApprove: null }, { id: { $in: asked.map((approver) => approver.cardId) } }],
    },
    { orderBy: { createdAt: "asc", id: "asc" } },
  );
}

/** What an approver is told of each quorum card: the thresholds, the counts so far, and the others asked. */
export type PersonQuorumView = {
  approve: number;
  deny: number;
  approvers: number;
  approvals: number;
  denials: number;
  /** The others asked, in the agent's order: by their binding's label (none when the agent gave none) and verdict. */
  others: { personLabel?: string; verdict: string }[];
};

/**
 * What `svcUserId`, an approver, is told of each quorum card among these, by card. The others are named only
 * by the label their own binding to the card's agent carries: the agent's name for them, never their id.
 */
export async function quorumsOf(
  em: EntityManager,
  svcUserId: string,
  cards: readonly Card[],
): Promise<Map<string, PersonQuorumView>> {
  const quorumCards = cards.filter((card) => card.quorumApprove !== null);
  if (quorumCards.length === 0) return new Map();
  const rows = await em.find(
    CardApprover,
    { cardId: { $in: quorumCards.map((card) => card.id) } },
    { orderBy: { position: "asc" } },
  );
  const bindings = await em.find(Binding, {
    agentId: { $in: [...new Set(quorumCards.map((card) => card.agentId))] },
    svcUserId: { $in: [...new Set(rows.map((row) => row.svcUserId))] },
    unboundAt: null,
  });
  const labelOf = (agentId: string, approver: string) =>
    bindings.find((binding) => binding.agentId === agentId && binding.svcUserId === approver)?.personLabel ?? undefined;
  return new Map(
    quorumCards.map((card) => {
      const asked = rows.filter((row) => row.cardId === card.id);
      return [
        card.id,
        {
          approve: card.quorumApprove as number,
          deny: card.quorumDeny as number,
          approvers: asked.length,
          approvals: asked.filter((row) => row.verdict === "approve").length,
          denials: asked.filter((row) => row.verdict === "denied").length,
          others: asked
            .filter((row) => row.svcUserId !== svcUserId)
            .map((row) => {
              const personLabel = labelOf(card.agentId, row.svcUserId);
              return { ...(personLabel !== undefined && { personLabel }), verdict: row.verdict ?? "" };
            }),
        },
      ];
    }),
  );
}

/** The person's rows among these quorum cards' approvers, by card. */
export async function approverRowsOf(
  em: EntityManager,
  svcUserId: string,
  cards: readonly Card[],
  options: { refresh?: boolean } = {},
): Promise<Map<string, CardApprover>> {
  const quorumCards = cards.filter((card) => card.quorumApprove !== null).map((card) => card.id);
  if (quorumCards.length === 0) return new Map();
  const rows = await em.find(CardApprover, { cardId: { $in: quorumCards }, svcUserId }, options);
  return new Map(rows.map((row) => [row.cardId, row]));
}

/**
 * The decided cards, each the person's (to them, or a quorum card they are an approver of) and still
 * queued at `now` (spec, confirm's errors): another person's or none is 404, one past its `ttl_at` 410,
 * any other no longer queued 409 with its status; a quorum card they decided already 409
 * `already_decided`. The first failing decision answers; nothing is applied.
 */
export function requireDecidable(
  cards: readonly Card[],
  svcUserId: string,
  decisions: readonly Decision[],
  now: Date,
  asApprover: ReadonlyMap<string, CardApprover>,
): Map<string, Card> {
  const mine = (card: Card) => (card.quorumApprove === null ? card.svcUserId === svcUserId : asApprover.has(card.id));
  const byId = new Map(cards.filter(mine).map((card) => [card.id, card]));
  for (const { cardId } of decisions) {
    const card = byId.get(cardId);
    if (!card) throw refuse("not_found", `card ${cardId} is not one of your cards`);
    const { status } = cardStateAt(card, now);
    if (status === "expired")
      throw refuse("failed_precondition", `card ${cardId} expired at ${card.ttlAt.toISOString()}`, {
        status_code: 410,
      });
    if (status !== "queued") throw refuse("failed_precondition", `card ${cardId} is no longer queued: ${status}`);
    if (asApprover.get(cardId)?.verdict)
      throw refuse("failed_precondition", `you decided card ${cardId} already; each approver decides once`, {
        code: "already_decided",
      });
  }
  return byId;
}

/**
 * The decided cards, read and checked as `requireDecidable` says, with the decisions document their digests
 * make: what confirm-challenge's passkey signs and what confirm checks the assertion against.
 */
export async function decidedCards(
  em: EntityManager,
  svcUserId: string,
  decisions: readonly Decision[],
  now: Date,
): Promise<{ byId: Map<string, Card>; document: string }> {
  const cards = await em.find(Card, { id: { $in: decisions.map((d) => d.cardId) } });
  const byId = requireDecidable(cards, svcUserId, decisions, now, await approverRowsOf(em, svcUserId, cards));
  return { byId, document: decisionsDocument(decisions, (cardId) => byId.get(cardId)?.cardDigest ?? "") };
}
