import { connectNats, type Logger, type NatsConnection } from "@svc/platform";

/** How long to wait before trying NATS again while it cannot be reached. */
const retryMs = 2000;

/** One kind of notification: its subject and what hearing one does. */
export interface NotificationHandler {
  subject: string;
  name: string;
  hear(data: Uint8Array): void;
}

/**
 * This gateway's one NATS connection, with one subscription per kind of notification (card_watch.proto,
 * inbox_watch.proto) waking the waits it holds. NATS is not needed to serve: while it cannot be reached
 * (also at start, retried every 2 s), held waits run to their end and read again then, so the gateway stays
 * ready. `connected` is told the connection once it is open (the inbox presence answers on it). Returns
 * the function that closes the connection.
 */
export function listenForNotifications(options: {
  natsUrl: string;
  handlers: readonly NotificationHandler[];
  connected?: (nc: NatsConnection) => void;
  logger: Logger;
}): () => Promise<void> {
  const { logger } = options;
  let stopped = false;
  let connection: NatsConnection | undefined;
  let retry: NodeJS.Timeout | undefined;

  const hear = (nc: NatsConnection, handler: NotificationHandler) =>
    nc.subscribe(handler.subject, {
      callback: (error, message) => {
        if (error) return logger.warn(`${handler.name} notifications ended`, { error });
        try {
          handler.hear(message.data);
        } catch (error) {
          logger.warn(`unreadable ${handler.name} notification dropped`, { error });
        }
      },
    });

  const open = async (failures: number): Promise<void> => {
    try {
      const nc = await connectNats({ url: options.natsUrl, name: "gateway" });
      if (stopped) return void (await nc.close());
      connection = nc;
      for (const handler of options.handlers) hear(nc, handler);
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
