import { type EntityManager, LockMode } from "@mikro-orm/postgresql";
import type { Clock, EventBus } from "@svc/platform";
import { refuse } from "../refusal.ts";
import { Card, CardAudit } from "./card.entity.ts";
import { agentCard, cardStateAt } from "./card-status.ts";
import { publishCardsLeftQueue, wakeApprovers } from "./card-watch.ts";

/** The spec's limit of a cancel's `reason`, which goes to the audit log. */
const maxReasonLength = 200;

/**
 * The agent cancels its queued card: `cancelled`, with an audit row (`card.cancelled`, the agent, the
 * reason) and no event; once committed, the long-polls held for it are woken. A card no longer queued (a
 * queued one past `ttl_at` included) is answered as it is, with `alreadyResolved`, and nothing changes.
 */
export async function cancel(
  ctx: { em: EntityManager; clock: Clock; bus: Pick<EventBus, "nc" | "subjectPrefix"> },
  agentId: string,
  requestId: string,
  reason: string | undefined,
): Promise<{ card: Card; status: Card["status"]; alreadyResolved: boolean }> {
  if (reason !== undefined && [...reason].length > maxReasonLength)
    throw refuse("invalid_argument", `reason must be at most ${maxReasonLength} characters`);
  const { id } = await agentCard(ctx.em, agentId, requestId);
  const outcome = await ctx.em.transactional(async (em) => {
    const card = await em.findOneOrFail(Card, { id }, { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true });
    const now = ctx.clock.now();
    const { status } = cardStateAt(card, now);
    if (status !== "queued") return { card, status, alreadyResolved: true };
    card.status = "cancelled";
    card.resolvedAt = now;
    em.create(CardAudit, {
      cardId: card.id,
      action: "card.cancelled",
      actor: `agent:${agentId}`,
      at: now,
      detail: reason === undefined ? null : { reason },
    });
    return { card, status: card.status, alreadyResolved: false };
  });
  if (!outcome.alreadyResolved) {
    publishCardsLeftQueue(ctx.bus, [outcome.card]);
    await wakeApprovers(ctx.em, ctx.bus, [outcome.card]);
  }
  return outcome;
}
