import { fromBinary } from "@bufbuild/protobuf";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { AckPolicy, DeliverPolicy, jetstreamManager, type ConsumerConfig, type JsMsg } from "@nats-io/jetstream";
import type { MikroORM } from "@mikro-orm/postgresql";
import { environmentName, type EventBus, type Logger } from "@svc/platform";
import { EventSchema, type Event } from "@svc/proto/events/v1/events_pb.js";
import { storeMessages, type IncomingMessage } from "../messages/message-store.ts";
import type { DeliveryWorker } from "./delivery-worker.ts";
import { renderPayload } from "./payload-rendering.ts";

export interface EventConsumerOptions {
  bus: EventBus;
  orm: MikroORM;
  logger: Logger;
  consumerName: string;
  ackWaitMs: number;
  /** Delay before a new delivery's first attempt (the schedule's first entry). */
  firstAttemptDelayMs: number;
  /** Takes the new deliveries claimed for it while storing, and is woken for those it had no room for. */
  worker: Pick<DeliveryWorker, "claimTerms" | "take" | "wake">;
}

/** Events pulled at a time, which also bounds one stored batch. */
const pullBatch = 256;
/**
 * Unacknowledged events the server lets this consumer hold. At most three batches are unacknowledged
 * at once (one being stored, one arrived, one pulled); the server must never reach this limit, since
 * the client then waits for missed heartbeats (some 30 s) before it pulls again.
 */
const maxAckPending = 4 * pullBatch;
/** An event type this build cannot render is offered again after this long (a newer build may be running by then). */
const unknownTypeRetryMs = 5 * 60 * 1000;
/** After Postgres refused a batch, its events come back after this long. */
const storeRetryMs = 1000;

type Decoded = { kind: "store"; msg: JsMsg; message: IncomingMessage } | { kind: "unknown_type"; msg: JsMsg } | { kind: "invalid"; msg: JsMsg };

/**
 * Reads every domain event from the stream through a durable consumer and stores it as a message
 * with its deliveries before acknowledging it, so an event is either stored or still on the stream.
 * Events are taken in batches (whatever arrived while the previous batch was being stored), one
 * statement per batch, and the batch's acknowledgements end with a confirmed one (ackAck).
 */
export async function startEventConsumer(options: EventConsumerOptions): Promise<{ stop(): Promise<void> }> {
  const { bus, orm, logger, worker } = options;
  await ensureConsumer(options);
  const consumer = await bus.js.consumers.get(bus.stream, options.consumerName);
  const messages = await consumer.consume({ max_messages: pullBatch });

  const storeBatch = async (batch: JsMsg[]) => {
    const decoded = batch.map((msg) => decode(msg, logger));
    const toStore = decoded.filter((d) => d.kind === "store");
    try {
      const terms = worker.claimTerms();
      const stored = await storeMessages(
        orm.em.fork(),
        toStore.map((d) => d.message),
        // A delayed first attempt is not due yet: nothing to claim now.
        { firstAttemptAt: new Date(terms.now.getTime() + options.firstAttemptDelayMs), claim: options.firstAttemptDelayMs > 0 ? { ...terms, perEndpoint: 0 } : terms },
      );
      worker.take(stored.claimed);
      if (stored.created > stored.claimed.length) worker.wake();
    } catch (error) {
      logger.warn("could not store events; they will be redelivered", { error, events: toStore.length });
      for (const d of decoded) {
        if (d.kind === "store") d.msg.nak(storeRetryMs);
        else settle(d);
      }
      return;
    }
    for (const d of decoded.slice(0, -1)) settle(d);
    // The server handles one connection's acknowledgements in order, so the confirmation of the last
    // one covers the batch; a lost acknowledgement only brings a duplicate that the dedup key drops.
    const last = decoded.at(-1);
    if (last?.kind === "store") {
      await last.msg.ackAck().catch((error: unknown) => logger.warn("acknowledgements not confirmed; events may be redelivered", { error, seq: last.msg.seq }));
    } else if (last) {
      settle(last);
    }
  };

  // Messages are batched by arrival: whatever the iterator hands over before the event loop turns
  // joins the batch, which is stored once that turn is over. (The iterator's getPending() cannot tell
  // when it is drained: it keeps counting its own pull requests, so the last batch of a burst would
  // wait for the pull to expire.) The loop waits for the store once a full batch is waiting.
  const arrived: JsMsg[] = [];
  let storing: Promise<void> | undefined;
  const storeArrived = async () => {
    await new Promise((resolve) => setImmediate(resolve));
    while (arrived.length > 0) await storeBatch(arrived.splice(0, pullBatch));
    storing = undefined;
  };
  const done = (async () => {
    for await (const msg of messages) {
      arrived.push(msg);
      storing ??= storeArrived();
      if (arrived.length >= pullBatch) await storing;
    }
    await storing;
  })().catch((error: unknown) => logger.error("event consumer stopped", { error }));

  return {
    async stop() {
      messages.stop();
      await done;
    },
  };
}

/** Stored events are acknowledged; the others are offered again later or dropped for good. */
function settle(d: Decoded): void {
  if (d.kind === "store") d.msg.ack();
  else if (d.kind === "unknown_type") d.msg.nak(unknownTypeRetryMs);
  // The reason is logged where it is found: a +TERM with a reason is not understood by servers before 2.10.
  else d.msg.term();
}

function decode(msg: JsMsg, logger: Logger): Decoded {
  const invalid = (reason: string, dedupKey?: string): Decoded => {
    logger.error("event breaks the event contract; it cannot be delivered", { subject: msg.subject, seq: msg.seq, dedupKey, reason });
    return { kind: "invalid", msg };
  };
  let event: Event;
  try {
    event = fromBinary(EventSchema, msg.data);
  } catch {
    return invalid("not a valid Event envelope");
  }
  let rendering: ReturnType<typeof renderPayload>;
  try {
    rendering = renderPayload(event);
  } catch (error) {
    return invalid(`the payload cannot be rendered: ${(error as Error).message}`, event.dedupKey);
  }
  if (rendering.kind === "unknown_type") {
    // A newer producer's type arrives as unknown fields; an envelope with none has no payload at all,
    // and offering that again would only hold a place among the consumer's pending messages.
    if (!event.$unknown?.length) return invalid("the envelope carries no payload", event.dedupKey);
    logger.warn("event of a type this build does not know; it will be offered again", { subject: msg.subject, seq: msg.seq, dedupKey: event.dedupKey });
    return { kind: "unknown_type", msg };
  }
  if (rendering.kind === "invalid") return invalid(rendering.reason, event.dedupKey);
  if (!event.dedupKey) return invalid("dedup_key is missing");
  if (!event.organizationId) return invalid("organization_id is missing", event.dedupKey);
  const occurredAt = event.occurredAt ? timestampDate(event.occurredAt) : null;
  if (occurredAt && Number.isNaN(occurredAt.getTime())) return invalid("occurred_at is not a valid instant", event.dedupKey);
  return {
    kind: "store",
    msg,
    message: {
      organizationId: event.organizationId,
      dedupKey: event.dedupKey,
      type: rendering.type,
      environment: environmentName(event.environment) ?? null,
      occurredAt,
      body: rendering.body,
    },
  };
}

/** Creates the durable consumer, or brings an existing one to the configured settings. */
async function ensureConsumer(options: EventConsumerOptions): Promise<void> {
  const { bus } = options;
  const jsm = await jetstreamManager(bus.nc);
  const settings = {
    filter_subject: `${bus.subjectPrefix}.>`,
    ack_wait: options.ackWaitMs * 1_000_000,
    max_ack_pending: maxAckPending,
  } satisfies Partial<ConsumerConfig>;
  const exists = await jsm.consumers.info(bus.stream, options.consumerName).then(
    () => true,
    () => false,
  );
  if (exists) {
    await jsm.consumers.update(bus.stream, options.consumerName, settings);
    return;
  }
  // Every event the stream still holds, also those published before the first start.
  await jsm.consumers
    .add(bus.stream, { durable_name: options.consumerName, ack_policy: AckPolicy.Explicit, deliver_policy: DeliverPolicy.All, ...settings })
    .catch(async (error: unknown) => {
      // Another replica created it first.
      await jsm.consumers.info(bus.stream, options.consumerName).catch(() => {
        throw error;
      });
    });
}
