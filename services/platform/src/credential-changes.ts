import { create, type MessageInitShape, toBinary } from "@bufbuild/protobuf";
import type { EntityManager } from "@mikro-orm/postgresql";
import { type ConsumerMessages, DeliverPolicy, jetstream, jetstreamManager } from "@nats-io/jetstream";
import { CredentialChangedSchema } from "@svc/proto/common/v1/credential_watch_pb.js";
import type { Clock } from "./clock.ts";
import { uuid } from "./ids.ts";
import type { Logger } from "./logger.ts";
import {
  credentialChangeStream,
  credentialChangeSubject,
  type EventBus,
  ensureCredentialStream,
  type NatsConnection,
} from "./nats.ts";
import { committedEvent, OutboxEvent, type OutboxRelay } from "./outbox.ts";

/** A serialized `CredentialChanged` (credential_watch.proto) and its message id, unique per change. */
export interface CredentialChangeMessage {
  messageId: string;
  payload: Uint8Array;
}

/** A change to tell the gateways, with a message id of its own (JetStream deduplicates a re-publish by it). */
export const credentialChanged = (
  change: MessageInitShape<typeof CredentialChangedSchema>,
): CredentialChangeMessage => ({
  messageId: `credential_changed:${uuid()}`,
  payload: toBinary(CredentialChangedSchema, create(CredentialChangedSchema, change)),
});

/**
 * Adds the change to the caller's unit of work, so it commits with the change it tells of. The row it returns
 * has its id once that transaction has committed, for `publishCredentialChange`.
 */
export function enqueueCredentialChange(
  em: EntityManager,
  clock: Clock,
  bus: Pick<EventBus, "subjectPrefix">,
  change: CredentialChangeMessage,
): OutboxEvent {
  return em.create(OutboxEvent, {
    subject: credentialChangeSubject(bus.subjectPrefix),
    messageId: change.messageId,
    payload: Buffer.from(change.payload),
    createdAt: clock.now(),
    publishedAt: null,
  });
}

/**
 * After the commit: hands the change's row to the relay and waits for JetStream to have stored it, so that the
 * operation that caused it answers only once every gateway can hear it. If that fails it is only logged: the
 * relay's next run publishes the row.
 */
export async function publishCredentialChange(
  outbox: Pick<OutboxRelay, "publishCommitted">,
  row: OutboxEvent,
  logger: Logger,
): Promise<void> {
  if (!(await outbox.publishCommitted([committedEvent(row)])))
    logger.warn("credential change not published at once; the outbox relay publishes it", {
      message_id: row.messageId,
    });
}

/**
 * Publishes a change that has no outbox behind it (the gateway keeps none: its console's API-key revocation;
 * account keeps no row naming a deleted person) and waits for JetStream to have stored it; a failure is the
 * caller's to report.
 */
export async function announceCredentialChange(
  nc: NatsConnection,
  subjectPrefix: string,
  change: CredentialChangeMessage,
): Promise<void> {
  await jetstream(nc).publish(credentialChangeSubject(subjectPrefix), change.payload, { msgID: change.messageId });
}

/** How long to wait before reading the stream again after it could not be read. */
const followRetryMs = 2000;

/**
 * Reads every credential change from now on, through an ordered consumer of this process's own (the
 * server forgets it once the process is gone; it resumes by itself after a reconnect), calling `hear`
 * with each payload. `gap` is called each time reading starts: what the caller cached before may predate
 * a change it never heard, so it forgets everything. While the stream cannot be read it tries again
 * every 2 s. Returns the function that stops it.
 */
export function followCredentialChanges(options: {
  nc: NatsConnection;
  stream: string;
  subjectPrefix: string;
  hear(payload: Uint8Array): void;
  gap(): void;
  logger: Logger;
}): () => Promise<void> {
  const { nc, logger } = options;
  let stopped = false;
  let messages: ConsumerMessages | undefined;
  let retry: NodeJS.Timeout | undefined;
  const follow = async () => {
    try {
      await ensureCredentialStream(await jetstreamManager(nc), options);
      const consumer = await jetstream(nc).consumers.get(credentialChangeStream(options.stream), {
        filter_subjects: credentialChangeSubject(options.subjectPrefix),
        deliver_policy: DeliverPolicy.New,
      });
      if (stopped) return;
      messages = await consumer.consume();
      options.gap();
      for await (const message of messages) {
        try {
          options.hear(message.data);
        } catch (error) {
          logger.warn("unreadable credential change dropped", { error, seq: message.seq });
        }
      }
    } catch (error) {
      if (!stopped) logger.warn("credential changes cannot be read; cached credentials expire by their TTL", { error });
    }
    if (!stopped) retry = setTimeout(() => void follow(), followRetryMs);
  };
  void follow();
  return async () => {
    stopped = true;
    clearTimeout(retry);
    await messages?.close();
  };
}
