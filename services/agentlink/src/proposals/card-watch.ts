import { create, toBinary } from "@bufbuild/protobuf";
import { type EventBus, notificationSubject } from "@svc/platform";
import { CardLeftQueueSchema } from "@svc/proto/agentlink/v1/card_watch_pb.js";
import type { Card } from "./card.entity.ts";
import { toProtoCardStatus } from "./card-status.ts";

/** The notification's name; its subject and payload are documented in `card_watch.proto`. */
const cardLeftQueue = "agentlink.card_left_queue";

/**
 * Tells the gateways that these cards left `queued`, so the check-status long-polls held for them answer
 * now. Call it after the transaction that changed them has committed: a wait woken earlier would read
 * the card still queued. A core NATS publish, at most once and never throwing: one that is lost (NATS
 * down, or this process killed before it) only makes a wait run to its end, when the status is read again.
 */
export function publishCardsLeftQueue(
  bus: Pick<EventBus, "nc" | "subjectPrefix">,
  cards: readonly Pick<Card, "agentId" | "requestId" | "status">[],
): void {
  const subject = notificationSubject(bus.subjectPrefix, cardLeftQueue);
  for (const card of cards) {
    const message = create(CardLeftQueueSchema, {
      agentId: card.agentId,
      requestId: card.requestId,
      status: toProtoCardStatus[card.status],
    });
    try {
      bus.nc.publish(subject, toBinary(CardLeftQueueSchema, message));
    } catch {
      // The connection is closing or closed: see above, the waits end on their own.
    }
  }
}
