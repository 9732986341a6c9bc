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
import { createVerificationRequests } from "../src/requests/request-writer.ts";
import { gateRetentionRules, pruneGate } from "../src/requests/retention.ts";

/**
 * Retention of sessions and requests against real PostgreSQL, with the clock: what goes on each side of
 * each cutoff, that a batch deletes at most its size, and that each statement reads an index when the
 * tables have grown.
 */
const logger = createLogger("test", {}, "warn");
const day = 86_400_000;
const clock = new ManualClock(new Date("2026-11-22T10:00:00Z"));
const retention = { sessionMs: day, requestMs: 30 * day, batchSize: 1000 };

let database: TestDatabase;
let orm: MikroORM;
let statements: pg.Pool;

async function seedSessions(label: string, expiresAt: Date, n: number) {
  await statements.query(
    `insert into sessions (id, token_hash, organization_id, environment, credential_id, credential_kind, created_at, expires_at)
       select gen_random_uuid(), sha256(($1 || i)::bytea), gen_random_uuid(), 'development', $1, 'secret_key', $2::timestamptz - interval '5 minutes', $2
         from generate_series(1, $3) as i`,
    [label, expiresAt, n],
  );
}

/** Requests of `label`: ended at `endedAt` (status completed), or pending when it is null. */
async function seedRequests(label: string, endedAt: Date | null, n: number, createdAt = endedAt ?? clock.now()) {
  await statements.query(
    `insert into requests (id, organization_id, environment, gate_key, gate_type, session_id, status, flow_secret_hash,
                           mode, sdk_type, notarize_offered, created_at, expires_at, ended_at, ended_by)
       select $1 || '-' || i, gen_random_uuid(), 'development', 'login', 'human', gen_random_uuid(),
              case when $2::timestamptz is null then 'pending' else 'completed' end, '\\x00', 'private', 'signal', false,
              $3, $3::timestamptz + interval '5 minutes', $2, case when $2::timestamptz is null then null else 'confirmed' end
         from generate_series(1, $4) as i`,
    [label, endedAt, createdAt, n],
  );
}

const count = async (table: string, label: string) => {
  const column = table === "sessions" ? "credential_id" : "split_part(id, '-', 1)";
  const { rows } = await statements.query(`select count(*)::int as n from ${table} where ${column} = $1`, [label]);
  return rows[0].n as number;
};

beforeAll(async () => {
  database = await createTestDatabase("gate-retention");
  orm = await openDatabase({
    url: database.url,
    schema: "gate",
    entities: [OutboxEvent],
    migrations: [...outboxMigrations, ...migrations],
    storedDefinitions: [createVerificationRequests],
    logger,
  });
  statements = openStatementPool({ url: database.url, schema: "gate", max: 4, logger });
});
afterAll(async () => {
  await statements?.end();
  await orm?.close();
  await database?.drop();
});

describe("gate retention", () => {
  it("deletes sessions a day after they expired and requests 30 days after they ended, not a millisecond sooner", async () => {
    const now = clock.now().getTime();
    await seedSessions("sgone", new Date(now - day - 1), 3);
    await seedSessions("skept", new Date(now - day), 2);
    await seedRequests("rgone", new Date(now - 30 * day - 1), 3);
    await seedRequests("rkept", new Date(now - 30 * day), 2);
    // Pending long past any retention (the expiry sweep ends it first): never deleted here.
    await seedRequests("rpending", null, 1, new Date(now - 90 * day));

    expect(await pruneGate(orm, clock, retention)).toEqual({ sessions: 3, requests: 3 });
    expect(await count("sessions", "sgone")).toBe(0);
    expect(await count("sessions", "skept")).toBe(2);
    expect(await count("requests", "rgone")).toBe(0);
    expect(await count("requests", "rkept")).toBe(2);
    expect(await count("requests", "rpending")).toBe(1);

    clock.advance(1);
    try {
      expect(await pruneGate(orm, clock, retention)).toEqual({ sessions: 2, requests: 2 });
      expect(await count("requests", "rpending")).toBe(1);
    } finally {
      clock.advance(-1);
    }
  });

  it("deletes at most its batch size in one statement", async () => {
    await seedRequests("rbatch", new Date(clock.now().getTime() - 40 * day), 7);
    const rules = gateRetentionRules(clock.now(), retention);
    expect(await deleteDueBatch(orm, rules.requests!, 3)).toBe(3);
    expect(await count("requests", "rbatch")).toBe(4);
    expect(await pruneGate(orm, clock, { ...retention, batchSize: 3 })).toMatchObject({ requests: 4 });
    expect(await count("requests", "rbatch")).toBe(0);
  });

  it("reads only what is due, oldest first on a plain index scan, once the tables have grown", async () => {
    await seedSessions("sgrown", new Date(clock.now().getTime() + 60_000), 20_000);
    // A backlog: more due than one batch takes, where the planner would rather read a bitmap.
    await seedSessions("sbacklog", new Date(clock.now().getTime() - 2 * day), 5_000);
    await seedRequests("rgrown", new Date(clock.now().getTime() - day), 20_000);
    await statements.query("analyze sessions");
    await statements.query("analyze requests");
    const rules = gateRetentionRules(clock.now(), retention);
    for (const [name, index] of [
      ["sessions", "sessions_by_expiry"],
      ["requests", "requests_by_end"],
    ] as const) {
      const rule = rules[name]!;
      const plan = await planOf(statements, dueBatchStatement(rule), [rule.before, 1000]);
      expect(plan, plan).not.toContain("Seq Scan");
      // A bitmap scan would visit the rows earlier batches deleted again on every run until VACUUM.
      expect(plan, plan).not.toContain("Bitmap");
      expect(plan, plan).toContain(index);
    }
  });

  it("the expiry sweep reads only pending requests past their window, on requests_due", async () => {
    await seedRequests("rpendingdue", null, 1000, new Date(clock.now().getTime() - 600_000));
    const plan = await planOf(
      statements,
      `with due as (select id from requests where status = 'pending' and expires_at <= ? and (confirming_until is null or confirming_until <= ?) order by expires_at limit ? for update skip locked)
       update requests r set status = 'expired', ended_at = r.expires_at, ended_by = 'window', event_sent = (r.opened_at is not null), partner_ref_sealed = null
       from due where r.id = due.id returning r.*`,
      [clock.now(), clock.now(), 200],
    );
    expect(plan, plan).not.toContain("Seq Scan");
  });
});
