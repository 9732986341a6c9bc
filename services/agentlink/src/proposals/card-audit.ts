import type { EntityManager } from "@mikro-orm/postgresql";
import { isUuid } from "@svc/platform";
import { refuse } from "../refusal.ts";
import { Card, CardAudit } from "./card.entity.ts";

/**
 * The operator's view of one card: the card and every state change of it, oldest first (by `at`, then by
 * the order they were written). The actions are whatever the card's code wrote; this reads them all.
 */
export async function cardAudit(em: EntityManager, cardId: string): Promise<{ card: Card; entries: CardAudit[] }> {
  if (!isUuid(cardId)) throw refuse("invalid_argument", "card_id must be a uuid");
  const card = await em.findOne(Card, { id: cardId });
  if (!card) throw refuse("not_found", `no card has the id ${cardId}`);
  const entries = await em.find(CardAudit, { cardId }, { orderBy: { at: "asc", id: "asc" } });
  return { card, entries };
}
