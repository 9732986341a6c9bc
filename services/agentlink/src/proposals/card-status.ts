import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { EntityManager } from "@mikro-orm/postgresql";
import type { Queryable } from "@svc/platform";
import { type CheckStatusResponseSchema, CardStatus as WireCardStatus } from "@svc/proto/agentlink/v1/agentlink_pb.js";
import { refuse } from "../refusal.ts";
import { Card, type CardStatus } from "./card.entity.ts";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The calling agent's card by its request_id; another agent's or none: not_found. */
export async function agentCard(em: EntityManager, agentId: string, requestId: string): Promise<Card> {
  const card = UUID.test(requestId) ? await em.findOne(Card, { agentId, requestId }) : null;
  if (!card) throw refuse("not_found", "no proposal with that request_id for this agent");
  return card;
}

/**
 * A card's status as anyone reads it at `now`: a queued card past its `ttl_at` is expired (resolved at
 * `ttl_at`) even before the sweep writes it down, so no reader ever sees a card queued past its end.
 */
export function cardStateAt(
  card: Pick<Card, "status" | "ttlAt" | "resolvedAt">,
  now: Date,
): { status: CardStatus; resolvedAt: Date | null } {
  if (card.status === "queued" && card.ttlAt <= now) return { status: "expired", resolvedAt: card.ttlAt };
  return { status: card.status, resolvedAt: card.resolvedAt ?? null };
}

/** A card status on the wire. */
export const toProtoCardStatus: Record<CardStatus, WireCardStatus> = {
  queued: WireCardStatus.QUEUED,
  approved: WireCardStatus.APPROVED,
  denied: WireCardStatus.DENIED,
  cancelled: WireCardStatus.CANCELLED,
  expired: WireCardStatus.EXPIRED,
};

/**
 * What `CheckStatus` answers for a card in `state` (`cardStateAt`); also what a card's notification carries
 * when it leaves queued, so both say the same.
 */
export function checkStatusAnswer(
  card: Pick<Card, "ttlAt">,
  state: ReturnType<typeof cardStateAt>,
): MessageInitShape<typeof CheckStatusResponseSchema> {
  // Confirmations, proofs and callbacks come later: nothing of them exists yet.
  return {
    status: toProtoCardStatus[state.status],
    ttlAt: timestampFromDate(card.ttlAt),
    ...(state.resolvedAt && { resolvedAt: timestampFromDate(state.resolvedAt) }),
    delivered: false,
    callbackAttempts: 0,
  };
}

/** The columns check-status answers from (confirmations add theirs here). */
const checkStatusStatement = {
  name: "agentlink_check_status",
  text: "select status, ttl_at, resolved_at from card where agent_id = $1 and request_id = $2",
};

/**
 * `CheckStatus`: the agent's card by its request_id (another agent's or none: not_found) as read at `now`.
 * One prepared statement, not the ORM: every held long-poll reads its card when it starts and again when
 * its time is up, so this is the hot path of thousands of waits.
 */
export async function checkStatus(
  db: Queryable,
  agentId: string,
  requestId: string,
  now: Date,
): Promise<MessageInitShape<typeof CheckStatusResponseSchema>> {
  const rows = UUID.test(requestId)
    ? (
        await db.query<{ status: CardStatus; ttl_at: Date; resolved_at: Date | null }>({
          ...checkStatusStatement,
          values: [agentId, requestId],
        })
      ).rows
    : [];
  const row = rows[0];
  if (!row) throw refuse("not_found", "no proposal with that request_id for this agent");
  const card = { status: row.status, ttlAt: row.ttl_at, resolvedAt: row.resolved_at };
  return checkStatusAnswer(card, cardStateAt(card, now));
}
