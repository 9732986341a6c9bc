import { defineEntity, p, type EntityManager, type MikroORM } from "@mikro-orm/postgresql";
import type { EventBus } from "./nats.ts";
import type { Logger } from "./logger.ts";
import type { Clock } from "./clock.ts";
import { Migration } from "./database.ts";
import { startWakeableLoop } from "./wakeable-loop.ts";

/**
 * Transactional outbox: an event row commits in the same transaction as the state change that caused
 * it, and the relay publishes it to JetStream afterwards. A crash between the two only delays the event;
 * a crash after publishing but before marking re-publishes it under the same message id, which JetStream
 * and the webhook dispatcher both deduplicate.
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

export const outboxMigration = { name: "0000_outbox", class: CreateOutboxTable };

/** Adds an event to the caller's unit of work; it is written when the caller's transaction commits. */
export function enqueueEvent(em: EntityManager, clock: Clock, event: { type: string; messageId: string; payload: Uint8Array }, bus: Pick<EventBus, "subject">): void {
  em.create(OutboxEvent, {
    subject: bus.subject(event.type),
    messageId: event.messageId,
    payload: Buffer.from(event.payload),
    createdAt: clock.now(),
    publishedAt: null,
  });
}

export interface OutboxRelay {
  /** Called after a commit that enqueued events, so they leave at once instead of at the next poll. */
  wake(): void;
  stop(): Promise<void>;
}

export function startOutboxRelay(options: { orm: MikroORM; bus: EventBus; logger: Logger; clock: Clock; pollMs?: number; batchSize?: number }): OutboxRelay {
  const { orm, bus, logger, clock } = options;
  const pollMs = options.pollMs ?? 1000;
  const batchSize = options.batchSize ?? 100;
  const publishBatch = async (): Promise<number> =>
    orm.em.fork().transactional(async (em) => {
      const rows = await em.execute<{ id: string; subject: string; message_id: string; payload: Buffer }[]>(
        `select id, subject, message_id, payload from outbox where published_at is null order by id limit ? for update skip locked`,
        [batchSize],
      );
      for (const row of rows) {
        await bus.js.publish(row.subject, row.payload, { msgID: row.message_id });
      }
      if (rows.length > 0) {
        await em.execute(`update outbox set published_at = ? where id in (${rows.map(() => "?").join(",")})`, [clock.now(), ...rows.map((r) => r.id)]);
      }
      return rows.length;
    });

  return startWakeableLoop({
    pollMs,
    work: async () => (await publishBatch()) > 0,
    onError: (error) => logger.warn("outbox relay could not publish; will retry", { error }),
  });
}
