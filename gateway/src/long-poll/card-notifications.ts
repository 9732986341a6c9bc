import { fromBinary } from "@bufbuild/protobuf";
import { connectNats, type Logger, type NatsConnection, notificationSubject } from "@svc/platform";
import type { CheckStatusResponse } from "@svc/proto/agentlink/v1/agentlink_pb.js";
import { CardLeftQueueSchema } from "@svc/proto/agentlink/v1/card_watch_pb.js";
import type { CardWaiters } from "./card-waiters.ts";

/** How long to wait before trying NATS again while it cannot be reached. */
const retryMs = 2000;

/**
 * The one subscription of this gateway to agentlink's `CardLeftQueue` notifications (card_watch.proto),
 * each waking the long-polls held for its card with the answer it carries. NATS is not needed to serve: while it cannot be reached
 * (also at start, retried every 2 s), held long-polls run to the end of their `wait_seconds` and answer
 * the status read then, so the gateway stays ready. Returns the function that closes the connection.
 */
export function listenForCardNotifications(options: {
  natsUrl: string;
  subjectPrefix: string;
  waiters: CardWaiters<CheckStatusResponse>;
  logger: Logger;
}): () => Promise<void> {
  const { logger } = options;
  const subject = notificationSubject(options.subjectPrefix, "agentlink.card_left_queue");
  let stopped = false;
  let connection: NatsConnection | undefined;
  let retry: NodeJS.Timeout | undefined;

  const hear = (nc: NatsConnection) =>
    nc.subscribe(subject, {
      callback: (error, message) => {
        if (error) return logger.warn("card notifications ended", { error });
        try {
          const card = fromBinary(CardLeftQueueSchema, message.data);
          options.waiters.wake(card.agentId, card.requestId, card.answer);
        } catch (error) {
          logger.warn("unreadable card notification dropped", { error });
        }
      },
    });

  const open = async (failures: number): Promise<void> => {
    try {
      const nc = await connectNats({ url: options.natsUrl, name: "gateway" });
      if (stopped) return void (await nc.close());
      connection = nc;
      hear(nc);
      if (failures > 0) logger.info("NATS reached: long-polls wake on card notifications again");
    } catch (error) {
      if (stopped) return;
      if (failures === 0)
        logger.warn("NATS unreachable: long-polls run to their end until it answers; retrying", { error });
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
