import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { EntityManager } from "@mikro-orm/postgresql";
import { isUuid } from "@svc/platform";
import { type CheckStatusResponseSchema, CardStatus as WireCardStatus } from "@svc/proto/agentlink/v1/agentlink_pb.js";
import { refuse } from "../refusal.ts";
import { Card, type CardStatus } from "./card.entity.ts";
import type { CardStatusFields } from "./card-reader.ts";

/** The calling agent's card by its request_id; another agent's or none: not_found. */
export async function agentCard(em: EntityManager, agentId: string, requestId: string): Promise<Card> {
  const card = isUuid(requestId) ? await em.findOne(Card, { agentId, requestId }) : null;
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
  card: CardStatusFields,
  state: ReturnType<typeof cardStateAt>,
): MessageInitShape<typeof CheckStatusResponseSchema> {
  // Callbacks are webhook-dispatch's: the gateway asks it by card_id.
  return {
    status: toProtoCardStatus[state.status],
    cardId: card.id,
    ttlAt: timestampFromDate(card.ttlAt),
    ...(state.resolvedAt && { resolvedAt: timestampFromDate(state.resolvedAt) }),
    ...(card.ceremonyId && { ceremonyId: card.ceremonyId }),
    ...(card.resolutionJwt && { resolutionJwt: card.resolutionJwt }),
    ...(card.verdict && { verdict: card.verdict }),
    delivered: false,
    callbackAttempts: 0,
    ...(card.quorum && {
      quorum: { approve: card.quorum.approve, deny: card.quorum.deny },
      decisions: card.quorum.decisions.map(({ opaqueId, verdict, decidedAt }) => ({
        opaqueId,
        ...(verdict && { verdict }),
        ...(decidedAt && { decidedAt: timestampFromDate(decidedAt) }),
      })),
    }),
  };
}
