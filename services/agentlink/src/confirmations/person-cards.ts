import type { EntityManager } from "@mikro-orm/postgresql";
import { Card } from "../proposals/card.entity.ts";
import { cardStateAt } from "../proposals/card-status.ts";
import { refuse } from "../refusal.ts";
import { type Decision, decisionsDocument } from "./decisions.ts";

/** The person's queued cards, oldest first (the order they arrived in); never another person's. */
export const queuedCardsOf = (em: EntityManager, svcUserId: string, now: Date): Promise<Card[]> =>
  em.find(Card, { svcUserId, status: "queued", ttlAt: { $gt: now } }, { orderBy: { createdAt: "asc", id: "asc" } });

/**
 * The decided cards, each the person's and still queued at `now` (spec, confirm's errors): another
 * person's or none is 404, one past its `ttl_at` 410, any other no longer queued 409. The first failing
 * decision answers; nothing is applied.
 */
export function requireDecidable(
  cards: readonly Card[],
  svcUserId: string,
  decisions: readonly Decision[],
  now: Date,
): Map<string, Card> {
  const byId = new Map(cards.filter((card) => card.svcUserId === svcUserId).map((card) => [card.id, card]));
  for (const { cardId } of decisions) {
    const card = byId.get(cardId);
    if (!card) throw refuse("not_found", `card ${cardId} is not one of your cards`);
    const { status } = cardStateAt(card, now);
    if (status === "expired")
      throw refuse("failed_precondition", `card ${cardId} expired at ${card.ttlAt.toISOString()}`, {
        status_code: 410,
      });
    if (status !== "queued") throw refuse("failed_precondition", `card ${cardId} is no longer queued: ${status}`);
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
  const byId = requireDecidable(cards, svcUserId, decisions, now);
  return { byId, document: decisionsDocument(decisions, (cardId) => byId.get(cardId)?.cardDigest ?? "") };
}
