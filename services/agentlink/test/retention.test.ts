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
import { migrations } from "../src/migrations/index.ts";
import { cardRetentionRule, pruneCards } from "../src/proposals/retention.ts";

/**
 * Retention of cards and their audit log against real PostgreSQL, with the clock: each side of the
 * cutoff, queued cards never, the batch size, and the plans once the table has grown.
 */
const logger = createLogger("test", {}, "warn");
const day = 86_400_000;
const retentionMs = 430 * day;
const clock = new ManualClock(new Date("2027-11-22T10:00:00Z"));
const agentId = "0b7f3c1e-2a4d-4e6f-8a9b-1c2d3e4f5a6b";

let database: TestDatabase;
let orm: MikroORM;
let statements: pg.Pool;

/** `n` cards of `label` that ended at `endedAt` (approved), or queued when it is null; two audit rows each. */
async function seedCards(label: string, endedAt: Date | null, n: number) {
  await statements.query(
    `with c as (
       insert into card (id, agent_id, request_id, svc_user_id, summary_title, category, canonical_card, card_digest,
                         status, ttl_at, created_at, resolved_at, named_by, verdict, resolution_jwt)
         select gen_random_uuid(), $1, gen_random_uuid(), gen_random_uuid(), $2, 'payments', '{}', 'digest',
                case when $3::timestamptz is null then 'queued' else 'approved' end,
                coalesce($3, now()) + interval '10 minutes', coalesce($3, now()) - interval '1 minute', $3, 'svc_user_id',
                case when $3::timestamptz is null then null else 'approve' end,
                case when $3::timestamptz is null then null else 'proof' end
           from generate_series(1, $4)
         returning id, created_at)
     insert into card_audit (card_id, action, actor, at)
       select c.id, a.action, 'agent', c.created_at from c cross join (values ('proposed'), ('resolved')) as a(action)`,
    [agentId, label, endedAt, n],
  );
}

const left = async (label: string) => {
  const { rows } = await statements.query(
    `select count(distinct c.id)::int as cards, count(a.id)::int as audit
       from card c left join card_audit a on a.card_id = c.id where c.summary_title = $1`,
    [label],
  );
  return rows[0] as { cards: number; audit: number };
};

beforeAll(async () => {
  database = await createTestDatabase("agentlink-retention");
  orm = await openDatabase({
    url: database.url,
    schema: "agentlink",
    entities: [OutboxEvent],
    migrations: [...outboxMigrations, ...migrations],
    logger,
  });
  statements = openStatementPool({ url: database.url, schema: "agentlink", max: 4, logger });
  await statements.query(
    `insert into agent (id, organization_id, environment, name, display_name, categories, status, created_at)
       values ($1, 'org', 'development', 'Retention_Agent', 'Retention', '{payments}', 'active', now())`,
    [agentId],
  );
});
afterAll(async () => {
  await statements?.end();
  await orm?.close();
  await database?.drop();
});

describe("card retention", () => {
  it("deletes a card, with its audit log, 430 days after it ended, not a millisecond sooner, and never a queued one", async () => {
    const now = clock.now().getTime();
    await seedCards("gone", new Date(now - retentionMs - 1), 3);
    await seedCards("kept", new Date(now - retentionMs), 2);
    await seedCards("queued", null, 1);
    expect(await pruneCards(orm, clock, retentionMs, 1000)).toBe(3);
    expect(await left("gone")).toEqual({ cards: 0, audit: 0 });
    expect(await left("kept")).toEqual({ cards: 2, audit: 4 });

    clock.advance(1);
    try {
      expect(await pruneCards(orm, clock, retentionMs, 1000)).toBe(2);
      expect(await left("kept")).toEqual({ cards: 0, audit: 0 });
      clock.advance(10_000 * day);
      expect(await pruneCards(orm, clock, retentionMs, 1000)).toBe(0);
      expect(await left("queued")).toEqual({ cards: 1, audit: 2 });
    } finally {
      clock.set(new Date(now));
    }
  });

  it("deletes at most its batch size of cards in one statement", async () => {
    await seedCards("batch", new Date(clock.now().getTime() - 500 * day), 7);
    expect(await deleteDueBatch(orm, cardRetentionRule(clock.now(), retentionMs), 3)).toBe(3);
    expect(await left("batch")).toEqual({ cards: 4, audit: 8 });
    expect(await pruneCards(orm, clock, retentionMs, 3)).toBe(4);
    expect(await left("batch")).toEqual({ cards: 0, audit: 0 });
  });

  it("reads only due cards, and each one's audit rows, on indexes once the tables have grown", async () => {
    await seedCards("grown", new Date(clock.now().getTime() - day), 20_000);
    await statements.query("analyze card");
    await statements.query("analyze card_audit");
    const rule = cardRetentionRule(clock.now(), retentionMs);
    const plan = await planOf(statements, dueBatchStatement(rule), [rule.before, 1000]);
    expect(plan, plan).not.toContain("Seq Scan");
    expect(plan, plan).toContain("card_by_resolution");
    // What the cascade runs for each deleted card.
    const cascade = await planOf(statements, "delete from card_audit where card_id = ?", [agentId]);
    expect(cascade, cascade).not.toContain("Seq Scan");
  });
});
