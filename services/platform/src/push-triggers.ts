import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { AckPolicy, DeliverPolicy, jetstreamManager } from "@nats-io/jetstream";
import type { PushKind } from "@svc/proto/account/v1/account_pb.js";
import { type PushTrigger, PushTriggerSchema } from "@svc/proto/account/v1/push_trigger_pb.js";
import type { Clock } from "./clock.ts";
import { currentTraceContext, type StoredTraceContext, startConsumerSpan } from "./event-tracing.ts";
import type { Logger } from "./logger.ts";
import { type EventBus, pushTriggerStream, pushTriggerSubject } from "./nats.ts";
import type { OutboxRow } from "./outbox.ts";

/** What a push names (push_trigger.proto), before the person it goes to. */
export interface PushItem {
  kind: PushKind;
  itemId: string;
  title: string;
  expiresAt: Date;
}

const encode = (item: PushItem, svcUserId: string): Buffer =>
  Buffer.from(
    toBinary(
      PushTriggerSchema,
      create(PushTriggerSchema, {
        svcUserId,
        kind: item.kind,
        itemId: item.itemId,
        title: item.title,
        expiresAt: timestampFromDate(item.expiresAt),
      }),
    ),
  );

/** The outbox row of one person's push trigger, for a statement that writes it in the item's transaction. */
export const pushTriggerRow = (
  clock: Clock,
  bus: Pick<EventBus, "subjectPrefix">,
  item: PushItem,
  svcUserId: string,
): OutboxRow => ({
  subject: pushTriggerSubject(bus.subjectPrefix),
  messageId: `push:${item.itemId}:${svcUserId}`,
  payload: encode(item, svcUserId),
  createdAt: clock.now(),
  publishedAt: null,
  traceContext: currentTraceContext(),
});

/**
 * The same row without the person, for a statement that learns who is asked only as it runs: it appends
 * field 1 to the payload (`0x0a 0x24` and the uuid's 36 bytes) and the uuid to the message id.
 */
export const personlessPushTriggerRow = (
  clock: Clock,
  bus: Pick<EventBus, "subjectPrefix">,
  item: PushItem,
): OutboxRow => ({ ...pushTriggerRow(clock, bus, item, ""), messageId: `push:${item.itemId}:` });

/** A trigger not taken is delivered again after 2 s, doubling with each delivery up to a minute. */
const redeliverAfterMs = (deliveries: number) => Math.min(2000 * 2 ** Math.min(deliveries - 1, 5), 60_000);
/** How long account may hold a trigger before JetStream delivers it again. */
const ackWaitMs = 30_000;
const restartAfterMs = 2000;
/** Triggers taken at once: a burst of cards is written by several statements in flight, not one after another. */
const takingAtOnce = 8;

/**
 * Reads every push trigger through the durable consumer `consumerName`, calling `take` with each and the
 * context of its consumer span (child of the producer span its headers name, ended once the trigger is
 * settled), and acknowledging it only once `take` resolved (it commits what the trigger asks for): a trigger
 * is taken at least once, so `take` must be idempotent. An unreadable trigger is dropped; one `take` refused
 * is delivered again, later each time. Up to eight are taken at once, in no promised order. While the stream
 * cannot be read the consumer is listed in `bus.consumersDown` and tried again every 2 s. Returns the
 * function that stops it.
 */
export function consumePushTriggers(options: {
  bus: EventBus;
  consumerName: string;
  /** `traceContext` is the trigger's consumer span, child of its producer's: the pushes it leads to continue it. */
  take(trigger: PushTrigger, traceContext: StoredTraceContext): Promise<void>;
  logger: Logger;
}): () => Promise<void> {
  const { bus, consumerName, logger } = options;
  const stream = pushTriggerStream(bus.stream);
  let stopped = false;
  let close: (() => Promise<void>) | undefined;
  let retry: NodeJS.Timeout | undefined;
  const run = async () => {
    try {
      const jsm = await jetstreamManager(bus.nc);
      await jsm.consumers
        .add(stream, {
          durable_name: consumerName,
          ack_policy: AckPolicy.Explicit,
          deliver_policy: DeliverPolicy.All,
          filter_subject: pushTriggerSubject(bus.subjectPrefix),
          ack_wait: ackWaitMs * 1_000_000,
        })
        .catch(async (error: unknown) => {
          // It exists already (an earlier start, or another replica).
          await jsm.consumers.info(stream, consumerName).catch(() => {
            throw error;
          });
        });
      const messages = await (await bus.js.consumers.get(stream, consumerName)).consume({
        abort_on_missing_resource: true,
      });
      close = () => messages.close().then(() => undefined);
      if (stopped) return void (await close());
      bus.consumersDown.delete(consumerName);
      const taking = new Set<Promise<void>>();
      for await (const message of messages) {
        let trigger: PushTrigger;
        try {
          trigger = fromBinary(PushTriggerSchema, message.data);
        } catch (error) {
          logger.warn("unreadable push trigger dropped", { error, seq: message.seq });
          message.term();
          continue;
        }
        const consumed = startConsumerSpan(message.subject, message.headers);
        const taken: Promise<void> = options
          .take(trigger, consumed?.traceContext ?? null)
          .then(
            () => message.ack(),
            (error: unknown) => {
              logger.warn("push trigger not taken; it is delivered again", { error, seq: message.seq });
              message.nak(redeliverAfterMs(message.info.deliveryCount));
            },
          )
          .catch((error: unknown) => logger.warn("push trigger not acknowledged", { error, seq: message.seq }))
          .finally(() => {
            consumed?.span.end();
            taking.delete(taken);
          });
        taking.add(taken);
        if (taking.size >= takingAtOnce) await Promise.race(taking);
      }
      await Promise.all(taking);
    } catch (error) {
      if (!stopped) {
        bus.consumersDown.set(consumerName, error instanceof Error ? error.message : String(error));
        logger.warn("push triggers cannot be read; retrying", { error, consumer: consumerName });
      }
    }
    if (!stopped) retry = setTimeout(() => void run(), restartAfterMs);
  };
  void run();
  return async () => {
    stopped = true;
    clearTimeout(retry);
    await close?.();
  };
}
