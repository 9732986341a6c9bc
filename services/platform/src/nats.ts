import { connect, type NatsConnection } from "@nats-io/transport-node";
import { jetstream, jetstreamManager, type JetStreamClient } from "@nats-io/jetstream";

export interface EventBus {
  nc: NatsConnection;
  js: JetStreamClient;
  stream: string;
  subjectPrefix: string;
  subject(type: string): string;
}

/** JetStream drops a re-published message id inside this window, so a relay retry after a crash is harmless. */
const duplicateWindowNs = 60 * 60 * 1e9;

export async function connectEventBus(options: { url: string; name: string; stream: string; subjectPrefix: string }): Promise<EventBus> {
  const nc = await connect({ servers: options.url.split(","), name: options.name, maxReconnectAttempts: -1 });
  const jsm = await jetstreamManager(nc);
  const subjects = [`${options.subjectPrefix}.>`];
  try {
    await jsm.streams.info(options.stream);
  } catch {
    try {
      await jsm.streams.add({ name: options.stream, subjects, duplicate_window: duplicateWindowNs });
    } catch (error) {
      // Another service created it between our look-up and our add.
      await jsm.streams.info(options.stream).catch(() => {
        throw error;
      });
    }
  }
  return {
    nc,
    js: jetstream(nc),
    stream: options.stream,
    subjectPrefix: options.subjectPrefix,
    subject: (type) => `${options.subjectPrefix}.${type}`,
  };
}

export async function natsReachable(bus: EventBus): Promise<void> {
  if (bus.nc.isClosed()) throw new Error("NATS connection closed");
  await bus.nc.flush();
}
