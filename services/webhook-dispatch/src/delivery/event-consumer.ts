import { AckPolicy, type ConsumerConfig, DeliverPolicy, type JsMsg, jetstreamManager } from "@nats-io/jetstream";
import { type EventBus, type Logger, type Queryable, type StoredTraceContext, startConsumerSpan } from "@svc/platform";
import type { CallbackEndpoints } from "../callbacks/callback-endpoints.ts";
import { type IncomingMessage, storeMessages } from "../messages/message-store.ts";
import type { DeliveryWorker } from "./delivery-worker.ts";
import { decodeEvent } from "./event-decoding.ts";
import { type ParkedEvent, parkEvents } from "./parked-events.ts";

export interface EventConsumerOptions {
  bus: EventBus;
  statements: Queryable;
  logger: Logger;
  consumerName: string;
  ackWaitMs: number;
  /** Delay before a new delivery's first attempt (the schedule's first entry). */
  firstAttemptDelayMs: number;
  /** Takes the new deliveries claimed for it while storing, and is woken for those it had no room for. */
  worker: Pick<DeliveryWorker, "claimTerms" | "take" | "wake">;
  /** Brings agents' callback endpoints up to date before their resolutions are stored. */
  callbacks: CallbackEndpoints;
}

/** Events pulled at a time, which also bounds one stored batch. */
const pullBatch = 256;
/**
 * Unacknowledged events the server lets this consumer hold. At most three batches are unacknowledged
 * at once (one being stored, one arrived, one pulled); the server must never reach this limit, since
 * the client then waits for missed heartbeats (some 30 s) before it pulls again.
 */
const maxAckPending = 4 * pullBatch;
/** After Postgres refused a batch, its events come back after this long. */
const storeRetryMs = 1000;
/** A resolution whose agent's callback target agentlink could not tell comes back after this long. */
const callbackTargetRetryMs = 5000;
/** The longest pause before restarting a consumer that stopped; the pauses double up to it from 1 s. */
const maxRestartDelayMs = 30_000;

/** The pause before the restart that follows `failures` failures in a row (counting this one). */
export const restartDelayMs = (failures: number): number =>
  Math.min(1000 * 2 ** Math.max(failures - 1, 0), maxRestartDelayMs);

type Received =
  | { kind: "store"; msg: JsMsg; message: IncomingMessage }
  | { kind: "park"; msg: JsMsg; event: ParkedEvent }
  | { kind: "invalid"; msg: JsMsg }
  /** Stored later: its agent's callback target is unknown for now (agentlink did not answer). */
  | { kind: "wait"; msg: JsMsg };

interface ConsumerRun {
  /** Settles when the run ends: with what ended it, or undefined after `stop()`. */
  ended: Promise<Error | undefined>;
  stop(): void;
}

/**
 * Reads every domain event from the stream through a durable consumer and stores it as a message
 * with its deliveries before acknowledging it, so an event is either stored or still on the stream.
 * Events are taken in batches (whatever arrived while the previous batch was being stored), one
 * statement per batch, and the batch's acknowledgements end with a confirmed one (ackAck).
 *
 * If the consumer stops on an error (its durable consumer or the stream was deleted, a store failed
 * unexpectedly), it is started again, consumer included, after a pause that doubles up to 30 s;
 * meanwhile it is listed in `bus.consumersDown`, so the service reports itself not ready.
 */
export async function startEventConsumer(options: EventConsumerOptions): Promise<{ stop(): Promise<void> }> {
  const { bus, logger, consumerName } = options;
  let run = await consume(options);
  let stopping = false;
  let interruptPause: (() => void) | undefined;
  const pause = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      interruptPause = () => {
        clearTimeout(timer);
        resolve();
      };
    });

  let failures = 0;
  const restart = async (): Promise<ConsumerRun | undefined> => {
    for (;;) {
      failures += 1;
      await pause(restartDelayMs(failures));
      if (stopping) return undefined;
      try {
        const started = await consume(options);
        if (!stopping) return started;
        started.stop();
        await started.ended;
        return undefined;
      } catch (error) {
        bus.consumersDown.set(consumerName, error instanceof Error ? error.message : String(error));
        logger.warn("event consumer could not restart; will retry", { error, consumer: consumerName, failures });
      }
    }
  };

  const supervision = (async () => {
    for (;;) {
      const startedAt = performance.now();
      const error = await run.ended;
      if (stopping || error === undefined) return;
      // A run that outlasted the longest pause was healthy: the backoff starts over.
      if (performance.now() - startedAt > maxRestartDelayMs) failures = 0;
      bus.consumersDown.set(consumerName, error.message);
      logger.error("event consumer stopped; restarting it", { error, consumer: consumerName });
      const restarted = await restart();
      if (!restarted) return;
      run = restarted;
      bus.consumersDown.delete(consumerName);
      logger.info("event consumer restarted", { consumer: consumerName });
    }
  })();

  return {
    async stop() {
      stopping = true;
      interruptPause?.();
      run.stop();
      await supervision;
    },
  };
}

/** One run of the consumer: from making sure the durable consumer exists until it stops. */
async function consume(options: EventConsumerOptions): Promise<ConsumerRun> {
  const { bus, statements, logger, worker } = options;
  await ensureConsumer(options);
  const consumer = await bus.js.consumers.get(bus.stream, options.consumerName);
  // By default a deleted consumer or stream leaves the loop waiting for someone to restore them;
  // stopping instead lets the restart recreate them.
  const messages = await consumer.consume({ max_messages: pullBatch, abort_on_missing_resource: true });

  // One consumer span per event, child of the relay's producer span, ended once the batch is settled.
  const storeBatch = async (batch: JsMsg[]) => {
    const spans = batch.map((msg) => startConsumerSpan(msg.subject, msg.headers));
    try {
      await storeReceived(batch.map((msg, i) => receive(msg, logger, spans[i]?.traceContext ?? null)));
    } finally {
      for (const consumed of spans) consumed?.span.end();
    }
  };

  const storeReceived = async (receivedFirst: Received[]) => {
    let received = receivedFirst;
    try {
      const unreachable = await options.callbacks.refresh(
        received.flatMap((r) => (r.kind === "store" ? [r.message] : [])),
        worker.claimTerms().now,
      );
      if (unreachable.size > 0)
        received = received.map((r) =>
          r.kind === "store" && r.message.resolvedCard && unreachable.has(r.message.resolvedCard.agentId)
            ? { kind: "wait", msg: r.msg }
            : r,
        );
    } catch (error) {
      logger.warn("could not refresh agents' callback endpoints; the events will be redelivered", { error });
      for (const r of received) settle(r.kind === "invalid" ? r : { kind: "wait", msg: r.msg });
      return;
    }
    const toStore = received.filter((r) => r.kind === "store");
    const toPark = received.filter((r) => r.kind === "park");
    try {
      const terms = worker.claimTerms();
      if (toPark.length > 0)
        await parkEvents(
          statements,
          toPark.map((r) => r.event),
          terms.now,
        );
      const stored = await storeMessages(
        statements,
        toStore.map((r) => r.message),
        // A delayed first attempt is not due yet: nothing to claim now.
        {
          firstAttemptAt: new Date(terms.now.getTime() + options.firstAttemptDelayMs),
          claim: options.firstAttemptDelayMs > 0 ? { ...terms, perEndpoint: 0 } : terms,
        },
      );
      worker.take(stored.claimed);
      if (stored.created > stored.claimed.length) worker.wake();
    } catch (error) {
      logger.warn("could not store events; they will be redelivered", {
        error,
        events: toStore.length + toPark.length,
      });
      for (const r of received) {
        if (r.kind === "invalid") r.msg.term();
        else r.msg.nak(r.kind === "wait" ? callbackTargetRetryMs : storeRetryMs);
      }
      return;
    }
    for (const r of received.slice(0, -1)) settle(r);
    // The server handles one connection's acknowledgements in order, so the confirmation of the last
    // one covers the batch; a lost acknowledgement only brings a duplicate that the dedup key drops.
    const last = received.at(-1);
    if (last && (last.kind === "store" || last.kind === "park")) {
      await last.msg
        .ackAck()
        .catch((error: unknown) =>
          logger.warn("acknowledgements not confirmed; events may be redelivered", { error, seq: last.msg.seq }),
        );
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
  let failure: unknown;
  let stopped = false;
  const storeArrived = async () => {
    try {
      await new Promise((resolve) => setImmediate(resolve));
      while (arrived.length > 0) await storeBatch(arrived.splice(0, pullBatch));
    } catch (error) {
      // Unexpected (storeBatch handles a refused store): this run ends, and the restart takes over.
      failure ??= error;
      messages.stop();
    } finally {
      storing = undefined;
    }
  };
  const ended = (async () => {
    try {
      for await (const msg of messages) {
        arrived.push(msg);
        storing ??= storeArrived();
        if (arrived.length >= pullBatch) await storing;
      }
    } finally {
      await storing;
    }
    if (failure !== undefined) throw failure;
    if (!stopped) throw new Error("the stream of events ended");
  })().then(
    () => undefined,
    (error: unknown) => (error instanceof Error ? error : new Error(String(error))),
  );

  return {
    ended,
    stop() {
      stopped = true;
      messages.stop();
    },
  };
}

/**
 * Stored and parked events are acknowledged; those that break the contract are dropped for good; those
 * waiting for a callback target come back later.
 */
function settle(r: Received): void {
  if (r.kind === "invalid") {
    // The reason is logged where it is found: a +TERM with a reason is not understood by servers before 2.10.
    r.msg.term();
  } else if (r.kind === "wait") {
    r.msg.nak(callbackTargetRetryMs);
  } else {
    r.msg.ack();
  }
}

function receive(msg: JsMsg, logger: Logger, traceContext: StoredTraceContext): Received {
  const decoded = decodeEvent(msg.data);
  switch (decoded.kind) {
    case "message":
      return { kind: "store", msg, message: { ...decoded.message, traceContext } };
    case "unknown_type":
      logger.warn("event of a type this build does not know; it is parked until a build that knows it starts", {
        subject: msg.subject,
        seq: msg.seq,
        dedupKey: decoded.dedupKey,
      });
      return { kind: "park", msg, event: { dedupKey: decoded.dedupKey, subject: msg.subject, envelope: msg.data } };
    case "invalid":
      logger.error("event breaks the event contract; it cannot be delivered", {
        subject: msg.subject,
        seq: msg.seq,
        dedupKey: decoded.dedupKey,
        reason: decoded.reason,
      });
      return { kind: "invalid", msg };
  }
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
    .add(bus.stream, {
      durable_name: options.consumerName,
      ack_policy: AckPolicy.Explicit,
      deliver_policy: DeliverPolicy.All,
      ...settings,
    })
    .catch(async (error: unknown) => {
      // Another replica created it first.
      await jsm.consumers.info(bus.stream, options.consumerName).catch(() => {
        throw error;
      });
    });
}
