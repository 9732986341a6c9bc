import { type JetStreamClient, type JetStreamManager, jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection, type Subscription } from "@nats-io/transport-node";

export type { NatsConnection, Subscription };

import { parse, type Settings } from "./config.ts";

export interface EventBus {
  nc: NatsConnection;
  js: JetStreamClient;
  stream: string;
  subjectPrefix: string;
  subject(type: string): string;
  /** Consumers of this process that are down while they restart, with the reason: the process is not ready meanwhile. */
  consumersDown: Map<string, string>;
}

/** JetStream drops a re-published message id inside this window, so a relay retry after a crash is harmless. */
const duplicateWindowMs = 60 * 60 * 1000;
const day = 24 * 60 * 60 * 1000;
const nanos = (ms: number) => ms * 1_000_000;

/**
 * Read as SVC_ variables only (startService): one stream serves the whole mesh, so there is no
 * per-service variant, or services would rewrite each other's stream settings at every start.
 */
export const eventStreamSettings = {
  eventStreamMaxAge: {
    parse: (raw: string) => {
      const ms = parse.duration(raw);
      if (ms < day)
        throw new Error(
          `must be at least 1d: the stream drops older events even when webhook-dispatch has not read them yet: ${raw}`,
        );
      return ms;
    },
    default: 7 * day,
    description:
      "how long the event stream keeps an event (JetStream max_age); well above the longest webhook-dispatch outage to sit out",
  },
} satisfies Settings;

export async function connectEventBus(options: {
  url: string;
  name: string;
  stream: string;
  subjectPrefix: string;
  maxAgeMs?: number;
}): Promise<EventBus> {
  const maxAgeMs = options.maxAgeMs ?? eventStreamSettings.eventStreamMaxAge.default;
  const nc = await connect({ servers: options.url.split(","), name: options.name, maxReconnectAttempts: -1 });
  const jsm = await jetstreamManager(nc);
  await ensureStream(jsm, { name: options.stream, subjects: [`${options.subjectPrefix}.>`], maxAgeMs });
  // Every outbox may carry a credential change or a push trigger; its relay can publish one only once the stream exists.
  await ensureCredentialStream(jsm, options);
  await ensurePushTriggerStream(jsm, options);
  return {
    nc,
    js: jetstream(nc),
    stream: options.stream,
    subjectPrefix: options.subjectPrefix,
    subject: (type) => `${options.subjectPrefix}.${type}`,
    consumersDown: new Map(),
  };
}

/**
 * The stream of credential changes (credential_watch.proto): beside the event stream, never under its
 * `<prefix>.>`, so webhook-dispatch's consumer of every event does not see them. Kept an hour, as long as
 * JetStream remembers a message id: a gateway away from NATS longer than that has let every cached answer
 * expire anyway, and a relay's late re-publish is still recognised.
 */
export const credentialChangeStream = (stream: string): string => `${stream}_CREDENTIALS`;
export const credentialChangeSubject = (subjectPrefix: string): string => `${subjectPrefix}_credentials.changed`;

export async function ensureCredentialStream(
  jsm: JetStreamManager,
  names: { stream: string; subjectPrefix: string },
): Promise<void> {
  await ensureStream(jsm, {
    name: credentialChangeStream(names.stream),
    subjects: [credentialChangeSubject(names.subjectPrefix)],
    maxAgeMs: duplicateWindowMs,
  });
}

/**
 * The stream of push triggers (push_trigger.proto): beside the event stream, never under its `<prefix>.>`,
 * so webhook-dispatch and partner webhooks never see them. Kept a day, as long as the longest card lives:
 * a trigger account reads later than that would push an item already ended.
 */
export const pushTriggerStream = (stream: string): string => `${stream}_PUSH`;
export const pushTriggerSubject = (subjectPrefix: string): string => `${subjectPrefix}_push.trigger`;
const pushTriggerMaxAgeMs = 24 * 3600_000;

export async function ensurePushTriggerStream(
  jsm: JetStreamManager,
  names: { stream: string; subjectPrefix: string },
): Promise<void> {
  await ensureStream(jsm, {
    name: pushTriggerStream(names.stream),
    subjects: [pushTriggerSubject(names.subjectPrefix)],
    maxAgeMs: pushTriggerMaxAgeMs,
  });
}

/** Creates the stream, or brings an existing one (made by an older build, or with another max age) to these limits. */
async function ensureStream(
  jsm: JetStreamManager,
  stream: { name: string; subjects: string[]; maxAgeMs: number },
): Promise<void> {
  const limits = { max_age: nanos(stream.maxAgeMs), duplicate_window: nanos(duplicateWindowMs) };
  const existing = await jsm.streams.info(stream.name).catch(() => undefined);
  if (!existing) {
    try {
      await jsm.streams.add({ name: stream.name, subjects: stream.subjects, ...limits });
      return;
    } catch (error) {
      // Another service created it between our look-up and our add; it gets our limits below.
      await jsm.streams.info(stream.name).catch(() => {
        throw error;
      });
    }
  } else if (
    existing.config.max_age === limits.max_age &&
    existing.config.duplicate_window === limits.duplicate_window
  ) {
    return;
  }
  await jsm.streams.update(stream.name, limits);
}

/**
 * The core NATS subject of a notification `name` (e.g. `agentlink.card_left_queue`): a wake-up between
 * processes, published after a commit and delivered at most once. It lies beside the event subjects,
 * never under `${subjectPrefix}.>`, so the event stream does not store it.
 */
export const notificationSubject = (subjectPrefix: string, name: string): string => `${subjectPrefix}_notify.${name}`;

/**
 * A plain NATS connection (no stream) for a process that only hears notifications, reconnecting for
 * ever once connected; the first connection fails at once when no server answers.
 */
export const connectNats = (options: { url: string; name: string }): Promise<NatsConnection> =>
  connect({ servers: options.url.split(","), name: options.name, maxReconnectAttempts: -1 });

export async function natsReachable(bus: EventBus): Promise<void> {
  if (bus.nc.isClosed()) throw new Error("NATS connection closed");
  for (const [consumer, reason] of bus.consumersDown) throw new Error(`event consumer ${consumer} is down: ${reason}`);
  await bus.nc.flush();
}
