import { fromBinary } from "@bufbuild/protobuf";
import { notificationSubject } from "@svc/platform";
import type { CheckStatusResponse } from "@svc/proto/agentlink/v1/agentlink_pb.js";
import { CardLeftQueueSchema } from "@svc/proto/agentlink/v1/card_watch_pb.js";
import type { NotificationHandler } from "./notifications.ts";
import type { Waiters } from "./waiters.ts";

/** The key of a card's check-status long-polls. request_id is a UUID, which agentlink stores (and notifies) in lower case whatever case the agent sent. */
export const cardKey = (agentId: string, requestId: string): string => `${agentId}/${requestId.toLowerCase()}`;

/** agentlink's `CardLeftQueue` notifications (card_watch.proto): each wakes the long-polls of its card with the answer it carries. */
export const cardNotifications = (
  subjectPrefix: string,
  waiters: Waiters<CheckStatusResponse>,
): NotificationHandler => ({
  name: "card",
  subject: notificationSubject(subjectPrefix, "agentlink.card_left_queue"),
  hear(data) {
    const card = fromBinary(CardLeftQueueSchema, data);
    waiters.wake(cardKey(card.agentId, card.requestId), card.answer);
  },
});
