import type { EntityManager } from "@mikro-orm/postgresql";
import {
  type Clock,
  committedEvent,
  type EventBus,
  enqueueEvent,
  type OutboxEvent,
  type OutboxRelay,
} from "@svc/platform";
import { Agent } from "../agents/agent.entity.ts";
import { refuse } from "../refusal.ts";
import { Card, CardAudit } from "./card.entity.ts";
import { resolutionExpired } from "./card-events.ts";
import { publishCardsLeftQueue, wakeApprovers } from "./card-watch.ts";

/** The spec's `limit` of one sweep: 1-1000, default 200. */
const sweepLimit = { default: 200, min: 1, max: 1000 } as const;

/**
 * The expire sweep: queued cards past `ttl_at` become `expired` (resolved at `ttl_at`), each with an audit
 * row `card.expired` (actor `sweep`) and `agents_ask.resolution.expired`, in one transaction. The rows are
 * taken `for update skip locked`, so replicas sweeping at once never take the same card, and a card a
 * cancel holds is left to the next sweep. Once committed, the events are handed to the relay and the
 * long-polls held for them are woken. Returns how many cards expired.
 */
export async function expireSweep(
  ctx: {
    em: EntityManager;
    clock: Clock;
    bus: Pick<EventBus, "subject" | "nc" | "subjectPrefix">;
    outbox: Pick<OutboxRelay, "publishCommitted">;
  },
  requestedLimit: number | undefined,
): Promise<number> {
  const limit = requestedLimit ?? sweepLimit.default;
  if (!Number.isInteger(limit) || limit < sweepLimit.min || limit > sweepLimit.max)
    throw refuse("invalid_argument", `limit must be ${sweepLimit.min}-${sweepLimit.max}`);
  const now = ctx.clock.now();
  const events: OutboxEvent[] = [];
  const expired = await ctx.em.transactional(async (em) => {
    const due = await em.execute<{ id: string }[]>(
      `with due as (
         select id from card where status = 'queued' and ttl_at <= ? order by ttl_at limit ? for update skip locked)
       update card c set status = 'expired', resolved_at = c.ttl_at from due where c.id = due.id returning c.id`,
      [now, limit],
    );
    if (due.length === 0) return [];
    const cards = await em.find(Card, { id: { $in: due.map((row) => row.id) } }, { refresh: true });
    const agents = await em.find(Agent, { id: { $in: [...new Set(cards.map((card) => card.agentId))] } });
    for (const card of cards) {
      const agent = agents.find((a) => a.id === card.agentId);
      if (!agent) throw new Error(`card ${card.id} has no agent ${card.agentId}`);
      em.create(CardAudit, { cardId: card.id, action: "card.expired", actor: "sweep", at: now, detail: null });
      events.push(enqueueEvent(em, ctx.clock, resolutionExpired(agent, card, now), ctx.bus));
    }
    return cards;
  });
  if (expired.length === 0) return 0;
  void ctx.outbox.publishCommitted(events.map(committedEvent));
  publishCardsLeftQueue(ctx.bus, expired);
  await wakeApprovers(ctx.em, ctx.bus, expired);
  return expired.length;
}
