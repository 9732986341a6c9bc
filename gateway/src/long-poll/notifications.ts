import { fromBinary } from "@bufbuild/protobuf";
import { connectNats, inboxChangedSubject, type Logger, type NatsConnection, notificationSubject } from "@svc/platform";
import type { CheckStatusResponse } from "@svc/proto/agentlink/v1/agentlink_pb.js";
import { CardLeftQueueSchema } from "@svc/proto/agentlink/v1/card_watch_pb.js";
import { type InboxChanged, InboxChangedSchema } from "@svc/proto/common/v1/inbox_watch_pb.js";
import { RequestChangedSchema } from "@svc/proto/gate/v1/request_watch_pb.js";
import { cardKey, type Waiters } from "./waiters.ts";

/** What an `InboxChanged` may tell exactly (inbox_watch.proto); a wake without it reads the inbox again. */
export type InboxChange = Exclude<InboxChanged["change"], { case: undefined }>;

/** How long to wait before trying NATS again while it cannot be reached. */
const retryMs = 2000;

/** One notification subject and what hearing a message on it does (it may throw on an unreadable one). */
interface Subscription {
  subject: string;
  hear(data: Uint8Array): void;
}

/** agentlink's `CardLeftQueue` (card_watch.proto) wakes the check-status long-polls of that card with its answer. */
export const cardNotifications = (subjectPrefix: string, waiters: Waiters<CheckStatusResponse>): Subscription => ({
  subject: notificationSubject(subjectPrefix, "agentlink.card_left_queue"),
  hear(data) {
    const card = fromBinary(CardLeftQueueSchema, data);
    waiters.wake(cardKey(card.agentId, card.requestId), card.answer);
  },
});

/** gate's `RequestChanged` (request_watch.proto) wakes the status long-polls of that request, which read it again. */
export const requestNotifications = (subjectPrefix: string, waiters: Pick<Waiters, "wake">): Subscription => ({
  subject: notificationSubject(subjectPrefix, "gate.request_changed"),
  hear(data) {
    waiters.wake(fromBinary(RequestChangedSchema, data).requestId);
  },
});

/**
 * `InboxChanged` (inbox_watch.proto), from gate, agentlink and account: the person's held inboxes apply
 * the change it tells, or read again.
 */
export const inboxNotifications = (
  subjectPrefix: string,
  waiters: Pick<Waiters<InboxChange>, "wake">,
): Subscription => ({
  subject: inboxChangedSubject(subjectPrefix),
  hear(data) {
    const { svcUserId, change } = fromBinary(InboxChangedSchema, data);
    waiters.wake(svcUserId, change.case === undefined ? undefined : change);
  },
});

/**
 * The one NATS connection of this gateway, subscribed to the notifications that wake its long-polls and
 * event streams. NATS is not needed to serve: while it cannot be reached (also at start, retried every
 * 2 s), held waits run to their end and read again then, so the gateway stays ready. `connected` is told
 * the connection once it is open (the inbox presence answers on it). Returns the function that closes
 * the connection.
 */
export function listenForNotifications(options: {
  natsUrl: string;
  subscriptions: readonly Subscription[];
  connected?: (nc: NatsConnection) => void;
  logger: Logger;
}): () => Promise<void> {
  const { logger } = options;
  let stopped = false;
  let connection: NatsConnection | undefined;
  let retry: NodeJS.Timeout | undefined;

  const hear = (nc: NatsConnection, subscription: Subscription) =>
    nc.subscribe(subscription.subject, {
      callback: (error, message) => {
        if (error) return logger.warn("notifications ended", { subject: subscription.subject, error });
        try {
          subscription.hear(message.data);
        } catch (error) {
          logger.warn("unreadable notification dropped", { subject: subscription.subject, error });
        }
      },
    });

  const open = async (failures: number): Promise<void> => {
    try {
      const nc = await connectNats({ url: options.natsUrl, name: "gateway" });
      if (stopped) return void (await nc.close());
      connection = nc;
      for (const subscription of options.subscriptions) hear(nc, subscription);
      options.connected?.(nc);
      if (failures > 0) logger.info("NATS reached: held waits wake on notifications again");
    } catch (error) {
      if (stopped) return;
      if (failures === 0)
        logger.warn("NATS unreachable: held waits run to their end until it answers; retrying", { error });
      retry = setTimeout(() => void open(failures + 1), retryMs);
    }
  };
  void open(0);

  return async () => {
    stopped = true;
    clearTimeout(retry);
    await connection?.close();
  };
}
