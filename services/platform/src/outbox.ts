import { defineEntity, type EntityManager, type InferEntity, p } from "@mikro-orm/postgresql";
import type pg from "pg";
import type { Clock } from "./clock.ts";
import { parse, type Settings } from "./config.ts";
import { inTransaction, Migration } from "./database.ts";
import { currentTraceContext, publishTraced, type StoredTraceContext } from "./event-tracing.ts";
import type { Logger } from "./logger.ts";
import { gauge, measureOldestAge } from "./metrics.ts";
import type { EventBus } from "./nats.ts";
import { startWakeableLoop } from "./wakeable-loop.ts";

/**
 * Transactional outbox: an event row commits in the same transaction as the state change that caused
 * it, and the relay publishes it to JetStream afterwards. A crash between the two only delays the event;
 * a crash after publishing but before marking re-publishes it under the same message id, which JetStream
 * and the webhook dispatcher both deduplicate (the stream's duplicate window is an hour; a row is retried
 * every poll).
 *
 * Rows are not promised to reach the stream in id order: a batch is published at once, and a row whose
 * publish fails is retried after later rows landed. No consumer needs that order: webhook-dispatch stores
 * each event as its own message with its own retried deliveries (so receivers never saw order anyway), the
 * push triggers are taken eight at a time in no order and each names its own item, and a credential change
 * only makes gateways forget a cached credential (it is also published directly, ahead of the relay).
 */
export const OutboxEvent = defineEntity({
  name: "OutboxEvent",
  tableName: "outbox",
  properties: {
    id: p.bigint().primary().autoincrement(),
    subject: p.string(),
    /** The spec's deduplication key, sent as Nats-Msg-Id. */
    messageId: p.string(),
    payload: p.blob(),
    createdAt: p.datetime(),
    publishedAt: p.datetime().nullable(),
    /** The trace of the change that wrote the event, which the relay and every consumer continue. */
    traceContext: p.string().nullable(),
  },
});

export class CreateOutboxTable extends Migration {
  override up(): void {
    this.addSql(`create table "outbox" (
      "id" bigserial primary key,
      "subject" text not null,
      "message_id" text not null,
      "payload" bytea not null,
      "created_at" timestamptz not null,
      "published_at" timestamptz null)`);
    this.addSql(`create index "outbox_unpublished" on "outbox" ("id") where "published_at" is null`);
  }
}

export class AddOutboxTraceContext extends Migration {
  override up(): void {
    this.addSql(`alter table "outbox" add column "trace_context" text null`);
  }
}

/**
 * The relay's claim of the oldest unpublished rows. The planner's statistics were taken while few rows waited,
 * so with a backlog it expects a few dozen and, once the table's rows lie in no order of id (new rows fill the
 * space of pruned ones), picks a bitmap scan of the partial index and a sort of every waiting row: 8 to 42 ms a
 * batch of 100 with 5,000 to 7,000 waiting (under the inquire benchmark's load), slower the longer the backlog,
 * just when the relay has to catch up. Walking the index in id order reads the batch and no more. A function,
 * so that the setting that keeps the bitmap scan out costs the relay no round trip of its own.
 */
export class CreateOutboxClaim extends Migration {
  override up(): void {
    this.addSql(`create function "claim_unpublished_events"("p_batch" integer) returns setof "outbox"
      language sql set enable_bitmapscan = off as $$
        select * from outbox where published_at is null order by id limit p_batch for update skip locked
      $$`);
  }
}

/** Every service's outbox, before its own migrations (startService). */
export const outboxMigrations = [
  { name: "0000_outbox", class: CreateOutboxTable },
  { name: "0000_outbox_trace_context", class: AddOutboxTraceContext },
  { name: "0000_outbox_claim", class: CreateOutboxClaim },
];

/** An event as the outbox row that carries it; the relay publishes it to `subject` under `messageId`. */
export interface OutboxRow {
  subject: string;
  messageId: string;
  payload: Buffer;
  createdAt: Date;
  publishedAt: null;
  traceContext: StoredTraceContext;
}

/**
 * The row `enqueueEvent` adds, for a hot-path statement that writes it itself in the transaction of
 * its state change (the relay and the consumers see no difference).
 */
export const outboxRow = (
  clock: Clock,
  event: { type: string; messageId: string; payload: Uint8Array },
  bus: Pick<EventBus, "subject">,
): OutboxRow => ({
  subject: bus.subject(event.type),
  messageId: event.messageId,
  payload: Buffer.from(event.payload),
  createdAt: clock.now(),
  publishedAt: null,
  traceContext: currentTraceContext(),
});

export type OutboxEvent = InferEntity<typeof OutboxEvent>;

/**
 * Adds an event to the caller's unit of work; it is written when the caller's transaction commits. The row
 * it returns has its id once that transaction has committed: `committedEvent` then hands it to the relay.
 */
export function enqueueEvent(
  em: EntityManager,
  clock: Clock,
  event: { type: string; messageId: string; payload: Uint8Array },
  bus: Pick<EventBus, "subject">,
): OutboxEvent {
  return em.create(OutboxEvent, outboxRow(clock, event, bus));
}

/** An event `enqueueEvent` added, as `publishCommitted` takes it, after its transaction committed. */
export const committedEvent = (row: OutboxEvent): CommittedEvent => ({
  id: String(row.id),
  subject: row.subject,
  messageId: row.messageId,
  payload: row.payload,
  traceContext: row.traceContext ?? null,
});

/** Read as SVC_ variables only (startService): one value for every service. */
export const outboxSettings = {
  outboxRetention: {
    parse: (raw: string) => {
      const ms = parse.duration(raw);
      // 0 reads as "off" elsewhere; here it would delete every row as soon as it is published.
      if (ms <= 0) throw new Error(`must be longer than 0: ${raw}`);
      return ms;
    },
    default: 24 * 60 * 60 * 1000,
    description: "how long a published outbox row is kept before the relay deletes it",
  },
} satisfies Settings;

const oldestUnrelayed = gauge(
  "outbox_oldest_unrelayed_age_seconds",
  "Age of the oldest event in the outbox not yet published to the event stream (0 when none waits)",
);

/** How often, in clock time, the relay looks for published rows past their retention. */
const pruneEveryMs = 60_000;

/** An outbox row its writer has committed, with its id. */
export interface CommittedEvent {
  id: string;
  subject: string;
  messageId: string;
  payload: Uint8Array;
  traceContext: StoredTraceContext;
}

export interface OutboxRelay {
  /** Runs the relay at once rather than at its next poll (it wakes itself after a refused publish). */
  wake(): void;
  /**
   * Publishes events their writer has just committed, at once and without claiming them: what a writer that
   * knows its rows' ids (a statement's `returning`, or `enqueueEvent`'s row once its transaction committed)
   * calls instead of `wake`, sparing each event the claim's transaction. A publish that fails leaves its row to
   * the relay's next run (woken at once). Resolves once every event is stored by JetStream (true) or one of
   * them was left to that run (false); it never rejects, so a writer that need not wait ignores it.
   */
  publishCommitted(events: readonly CommittedEvent[]): Promise<boolean>;
  stop(): Promise<void>;
}

/**
 * The relay's statements, prepared once per connection of the statement pool: through the ORM each cost about a
 * millisecond on this path (session 20 measured the same of account's push rows), several times the statement.
 */
const claimStatement = (batchSize: number) => ({
  name: "outbox_claim",
  text: "select id, subject, message_id, payload, trace_context from claim_unpublished_events($1)",
  values: [batchSize],
});
const markStatement = (now: Date, ids: string[]) => ({
  name: "outbox_mark_published",
  text: "update outbox set published_at = $1 where id = any($2::bigint[]) and published_at is null",
  values: [now, ids],
});

export function startOutboxRelay(options: {
  statements: pg.Pool;
  bus: EventBus;
  logger: Logger;
  clock: Clock;
  pollMs?: number;
  batchSize?: number;
  retentionMs?: number;
  pruneBatchSize?: number;
}): OutboxRelay {
  const { statements, bus, logger, clock } = options;
  const pollMs = options.pollMs ?? 1000;
  const batchSize = options.batchSize ?? 100;
  const retentionMs = options.retentionMs ?? outboxSettings.outboxRetention.default;
  const pruneBatchSize = options.pruneBatchSize ?? 500;
  let pruneDueAt = 0;

  const publishBatch = async (): Promise<number> =>
    inTransaction(statements, async (client) => {
      const { rows } = await client.query<{
        id: string;
        subject: string;
        message_id: string;
        payload: Buffer;
        trace_context: StoredTraceContext;
      }>(claimStatement(batchSize));
      // All at once: a burst (a card asking ten people writes ten push triggers) waits for one round of
      // acknowledgements instead of one per row. A row whose publish fails stays for the next poll while the
      // rest are marked, even those after it (no consumer needs order across rows: see above).
      const outcomes = await Promise.allSettled(
        rows.map((row) =>
          publishTraced(row.subject, row.trace_context, (headers) =>
            bus.js.publish(row.subject, row.payload, { msgID: row.message_id, headers }),
          ),
        ),
      );
      const published = rows.filter((_, i) => outcomes[i]?.status === "fulfilled");
      if (published.length > 0)
        await client.query(
          markStatement(
            clock.now(),
            published.map((row) => row.id),
          ),
        );
      const failed = outcomes.find((outcome) => outcome.status === "rejected");
      if (failed !== undefined)
        logger.warn("outbox relay could not publish; will retry", {
          error: failed.reason,
          unpublished: rows.length - published.length,
        });
      return published.length;
    });

  /**
   * Deletes published rows past their retention, a small batch per statement. Rows are published in
   * id order, so the oldest sit at the start of the primary key: each batch looks only at the first
   * rows by id, and no index on published_at has to be kept up on every publish. Unpublished rows
   * are never deleted. Returns whether another batch may be due at once.
   */
  const pruneBatch = async (): Promise<boolean> => {
    const now = clock.now();
    if (now.getTime() < pruneDueAt) return false;
    const { rowCount } = await statements.query(
      "delete from outbox where id in (select id from outbox order by id limit $1) and published_at < $2",
      [pruneBatchSize, new Date(now.getTime() - retentionMs)],
    );
    const deleted = rowCount ?? 0;
    if (deleted === 0) pruneDueAt = now.getTime() + pruneEveryMs;
    return deleted > 0;
  };

  const stopMeasuring = measureOldestAge(oldestUnrelayed, clock, async () => {
    const { rows } = await statements.query<{ oldest: Date | null }>(
      "select min(created_at) as oldest from outbox where published_at is null",
    );
    return rows[0]?.oldest;
  });
  /**
   * Events handed over by their writers are published unclaimed, so a relay run may claim one before it is
   * marked and publish it again: JetStream drops the second under the same message id, and the mark waits for
   * that run's transaction and then finds the row published. Marks are written one statement at a time, each
   * with every id acknowledged since the last began.
   */
  const acknowledged: string[] = [];
  let marking: Promise<void> | undefined;
  const inFlight = new Set<Promise<unknown>>();
  const markAcknowledged = async () => {
    while (acknowledged.length > 0) {
      const ids = acknowledged.splice(0);
      await statements.query(markStatement(clock.now(), ids)).catch((error: unknown) => {
        // Published already; the relay's next run publishes the rows again under their message ids and marks them.
        logger.warn("outbox relay could not mark published events; will retry", { error, events: ids.length });
        loop.wake();
      });
    }
    marking = undefined;
  };
  const publishCommitted = (events: readonly CommittedEvent[]): Promise<boolean> => {
    const publishes = events.map((event) => {
      const published = publishTraced(event.subject, event.traceContext, (headers) =>
        bus.js.publish(event.subject, event.payload, { msgID: event.messageId, headers }),
      ).then(
        () => {
          acknowledged.push(event.id);
          marking ??= markAcknowledged();
          return true;
        },
        () => {
          loop.wake();
          return false;
        },
      );
      inFlight.add(published);
      void published.finally(() => inFlight.delete(published));
      return published;
    });
    return Promise.all(publishes).then((stored) => stored.every(Boolean));
  };

  const loop = startWakeableLoop({
    pollMs,
    // Pruning first, so an event that cannot be published holds up no pruning.
    work: async () => {
      const pruned = await pruneBatch().catch((error: unknown) => {
        logger.warn("outbox relay could not delete published rows; will retry", { error });
        return false;
      });
      return (await publishBatch()) > 0 || pruned;
    },
    onError: (error) => logger.warn("outbox relay could not publish; will retry", { error }),
  });
  return {
    wake: loop.wake,
    publishCommitted,
    stop: async () => {
      stopMeasuring();
      await Promise.all(inFlight);
      await marking;
      await loop.stop();
    },
  };
}
