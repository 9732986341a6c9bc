import type { MikroORM } from "@mikro-orm/postgresql";
import {
  createLogger,
  deleteDueBatch,
  dueBatchStatement,
  ManualClock,
  OutboxEvent,
  openDatabase,
  openStatementPool,
  outboxMigrations,
} from "@svc/platform";
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../../../test/harness/index.ts";
import { planOf } from "../../../test/harness/plans.ts";
import { messageRetentionRule, pruneMessages } from "../src/messages/retention.ts";
import { migrations } from "../src/migrations/index.ts";

/**
 * Retention of messages and their deliveries against real PostgreSQL, with the clock: each side of the
 * cutoff, the batch size, and the plans once the tables have grown.
 */
const logger = createLogger("test", {}, "warn");
const day = 86_400_000;
const retentionMs = 90 * day;
const clock = new ManualClock(new Date("2026-11-22T10:00:00Z"));

let database: TestDatabase;
let orm: MikroORM;
let statements: pg.Pool;

/** `n` messages of `label` that arrived at `receivedAt`, each with a delivery to both test endpoints. */
async function seedMessages(label: string, receivedAt: Date, n: number) {
  await statements.query(
    `with m as (
       insert into messages (id, organization_id, dedup_key, type, body, received_at)
         select $1 || '-' || i, 'org', $1 || '-' || i, 'gate.human_verified', '\\x7b7d', $2 from generate_series(1, $3) as i
         returning id)
     insert into deliveries (message_id, endpoint_id, status, attempts, created_at, delivered_at)
       select m.id, e.id, 'delivered', 1, $2, $2 from m cross join (values ('ep_a'), ('ep_b')) as e(id)`,
    [label, receivedAt, n],
  );
}

const left = async (label: string) => {
  const { rows } = await statements.query(
    `select (select count(*)::int from messages where id like $1) as messages,
            (select count(*)::int from deliveries where message_id like $1) as deliveries`,
    [`${label}-%`],
  );
  return rows[0] as { messages: number; deliveries: number };
};

beforeAll(async () => {
  database = await createTestDatabase("webhook-retention");
  orm = await openDatabase({
    url: database.url,
    schema: "webhook_dispatch",
    entities: [OutboxEvent],
    migrations: [...outboxMigrations, ...migrations],
    logger,
  });
  statements = openStatementPool({ url: database.url, schema: "webhook_dispatch", max: 4, logger });
  await statements.query(
    `insert into endpoints (id, organization_id, url, status, secret_version, secret_sealed, created_at)
       values ('ep_a', 'org', 'https://a.example/hook', 'enabled', 1, '\\x00', now()),
              ('ep_b', 'org', 'https://b.example/hook', 'enabled', 1, '\\x00', now())`,
  );
});
afterAll(async () => {
  await statements?.end();
  await orm?.close();
  await database?.drop();
});

describe("message retention", () => {
  it("deletes messages, with their deliveries, 90 days after they arrived, not a millisecond sooner", async () => {
    const now = clock.now().getTime();
    await seedMessages("gone", new Date(now - retentionMs - 1), 3);
    await seedMessages("kept", new Date(now - retentionMs), 2);
    expect(await pruneMessages(orm, clock, retentionMs, 1000)).toBe(3);
    expect(await left("gone")).toEqual({ messages: 0, deliveries: 0 });
    expect(await left("kept")).toEqual({ messages: 2, deliveries: 4 });

    clock.advance(1);
    try {
      expect(await pruneMessages(orm, clock, retentionMs, 1000)).toBe(2);
      expect(await left("kept")).toEqual({ messages: 0, deliveries: 0 });
    } finally {
      clock.advance(-1);
    }
  });

  it("deletes at most its batch size of messages in one statement", async () => {
    await seedMessages("batch", new Date(clock.now().getTime() - 100 * day), 7);
    expect(await deleteDueBatch(orm, messageRetentionRule(clock.now(), retentionMs), 3)).toBe(3);
    expect(await left("batch")).toEqual({ messages: 4, deliveries: 8 });
    expect(await pruneMessages(orm, clock, retentionMs, 3)).toBe(4);
    expect(await left("batch")).toEqual({ messages: 0, deliveries: 0 });
  });

  it("reads only due messages, and each one's deliveries, on indexes once the tables have grown", async () => {
    await seedMessages("grown", new Date(clock.now().getTime() - day), 20_000);
    await statements.query("analyze messages");
    await statements.query("analyze deliveries");
    const rule = messageRetentionRule(clock.now(), retentionMs);
    const plan = await planOf(statements, dueBatchStatement(rule), [rule.before, 1000]);
    expect(plan, plan).not.toContain("Seq Scan");
    expect(plan, plan).toContain("messages_by_received");
    // What the cascade runs for each deleted message.
    const cascade = await planOf(statements, "delete from deliveries where message_id = ?", ["grown-1"]);
    expect(cascade, cascade).not.toContain("Seq Scan");
  });
});
