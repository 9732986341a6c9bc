import { create, toBinary } from "@bufbuild/protobuf";
import type { EntityManager } from "@mikro-orm/postgresql";
import { type EventBus, notificationSubject, publishInboxChanged } from "@svc/platform";
import { CardLeftQueueSchema } from "@svc/proto/agentlink/v1/card_watch_pb.js";
import { type Card, CardApprover } from "./card.entity.ts";
import type { QuorumView } from "./card-reader.ts";
import { checkStatusAnswer } from "./card-status.ts";

/** The notification's name; its subject and payload are documented in `card_watch.proto`. */
const cardLeftQueue = "agentlink.card_left_queue";

/**
 * Tells the gateways that these cards left `queued`, with each one's check-status answer, so the long-polls
 * held for them answer it now. Call it after the transaction that changed them has committed, with the
 * cards as committed: the woken waits answer exactly what the cards carry, without reading them again. A core NATS publish, at most once and never throwing: one that is lost (NATS
 * down, or this process killed before it) only makes a wait run to its end, when the status is read again.
 * The cards' people's inboxes are woken too: the cards left them.
 *
 * A quorum card's answer holds its approvers' decisions: `quorums` gives them by card; a quorum card
 * without one is announced without an answer, and its woken waits read it again.
 */
export function publishCardsLeftQueue(
  bus: Pick<EventBus, "nc" | "subjectPrefix">,
  cards: readonly Card[],
  quorums: ReadonlyMap<string, QuorumView> = new Map(),
): void {
  const subject = notificationSubject(bus.subjectPrefix, cardLeftQueue);
  for (const card of cards) {
    const quorum = quorums.get(card.id);
    const message = create(CardLeftQueueSchema, {
      agentId: card.agentId,
      requestId: card.requestId,
      // A card out of queue reads as it is stored, whatever the time.
      ...((card.quorumApprove === null || quorum) && {
        answer: checkStatusAnswer(
          { ...pickStatusFields(card), quorum },
          { status: card.status, resolvedAt: card.resolvedAt ?? null },
        ),
      }),
    });
    try {
      bus.nc.publish(subject, toBinary(CardLeftQueueSchema, message));
    } catch {
      // The connection is closing or closed: see above, the waits end on their own.
    }
  }
  publishInboxChanged(
    bus,
    cards.map((card) => card.svcUserId),
  );
}

const pickStatusFields = ({ id, status, ttlAt, resolvedAt, ceremonyId, resolutionJwt, verdict }: Card) => ({
  id,
  status,
  ttlAt,
  resolvedAt,
  ceremonyId,
  resolutionJwt,
  verdict,
});

/**
 * After the commit that took quorum cards out of queued (a cancel, the sweep): the card left every
 * approver's inbox, so their open inboxes are woken too. Best effort, like the notification itself.
 */
export async function wakeApprovers(
  em: EntityManager,
  bus: Pick<EventBus, "nc" | "subjectPrefix">,
  cards: readonly Card[],
): Promise<void> {
  const quorumCards = cards.filter((card) => card.quorumApprove !== null).map((card) => card.id);
  if (quorumCards.length === 0) return;
  try {
    const approvers = await em.find(CardApprover, { cardId: { $in: quorumCards } }, { fields: ["svcUserId"] });
    publishInboxChanged(
      bus,
      approvers.map((approver) => approver.svcUserId),
    );
  } catch {
    // The change is committed; an inbox not woken shows it when it next reads.
  }
}
