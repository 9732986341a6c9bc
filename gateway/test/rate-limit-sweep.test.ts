import { ManualClock } from "@svc/platform";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { RateLimiter } from "../src/rate-limits/rate-limiter.ts";
import { tiers } from "../src/rate-limits/rate-tiers.ts";
import { openLimiterDatabase } from "./limiter-database.ts";

/**
 * The rate-limit sweep on the real PostgreSQL: what it deletes on each side of the clock's instant,
 * its batches, its plan on a table that has grown, and that the index it uses leaves each take a HOT
 * update.
 */

// 12:00:03 UTC, inside one minute, hour and day window.
const clock = new ManualClock("2026-10-20T12:00:03Z");

let limiterDatabase: Awaited<ReturnType<typeof openLimiterDatabase>>;
let pool: pg.Pool;

const plan = (subject: string) => ({ tier: tiers.secretProduction, subject, clientIp: "198.51.100.7" });

async function seedCounters(prefix: string, expiresAt: Date, n: number) {
  await pool.query(
    `insert into rate_counters (subject, bucket, window_start, count, expires_at)
       select $1 || i, 'daily', 0, 1, $2 from generate_series(1, $3) as i`,
    [prefix, expiresAt, n],
  );
}

async function seedLeases(prefix: string, expiresAt: Date, n: number) {
  await pool.query(
    `insert into rate_leases (id, subject, expires_at) select gen_random_uuid(), $1 || i, $2 from generate_series(1, $3) as i`,
    [prefix, expiresAt, n],
  );
}

const left = async (table: string, prefix: string) =>
  Number((await pool.query(`select count(*) as n from ${table} where subject like $1`, [`${prefix}%`])).rows[0].n);

beforeAll(async () => {
  limiterDatabase = await openLimiterDatabase("rate_sweep");
  [pool] = limiterDatabase.pools as [pg.Pool];
});
afterAll(async () => {
  await limiterDatabase?.close();
});

describe("the rate-limit sweep", () => {
  test("deletes what expired before the clock's instant, keeps what expires at it or later", async () => {
    const now = clock.now();
    await seedCounters("edge-before-", new Date(now.getTime() - 1), 3);
    await seedCounters("edge-at-", now, 2);
    await seedCounters("edge-after-", new Date(now.getTime() + 1), 2);
    await seedLeases("edge-before-", new Date(now.getTime() - 1), 2);
    await seedLeases("edge-after-", new Date(now.getTime() + 1), 1);
    const limiter = new RateLimiter({ pool, leaseTtlMs: 60_000 });

    expect(await limiter.sweep(now)).toBe(5);
    expect(await left("rate_counters", "edge-before-")).toBe(0);
    expect(await left("rate_counters", "edge-at-")).toBe(2);
    expect(await left("rate_counters", "edge-after-")).toBe(2);
    expect(await left("rate_leases", "edge-before-")).toBe(0);
    expect(await left("rate_leases", "edge-after-")).toBe(1);

    // One millisecond later the counters at the old instant are due, the later ones are not yet.
    expect(await limiter.sweep(new Date(now.getTime() + 1))).toBe(2);
    expect(await left("rate_counters", "edge-after-")).toBe(2);
  });

  test("deletes in batches of at most its limit, until a batch comes back short", async () => {
    const now = clock.now();
    await seedCounters("batch-", new Date(now.getTime() - 60_000), 7);
    await seedLeases("batch-", new Date(now.getTime() - 60_000), 4);
    const deletes: number[] = [];
    const recording = {
      query: async (text: string, values: unknown[]) => {
        const answer = await pool.query(text, values);
        if (text.trimStart().startsWith("delete")) deletes.push(answer.rowCount ?? 0);
        return answer;
      },
    } as Pick<pg.Pool, "query">;
    const limiter = new RateLimiter({ pool: recording, leaseTtlMs: 60_000 });

    expect(await limiter.sweep(now, 3)).toBe(11);
    // Counters, leases, then the token-check ledger (empty here).
    expect(deletes).toEqual([3, 3, 1, 3, 1, 0]);
    expect(await left("rate_counters", "batch-")).toBe(0);
  });

  test("reads only the due rows on the expiry index when the table has grown", async () => {
    await seedCounters("grown-", new Date(clock.now().getTime() + 86_400_000), 20_000);
    await seedLeases("grown-", new Date(clock.now().getTime() + 60_000), 5_000);
    await pool.query("analyze rate_counters");
    await pool.query("analyze rate_leases");
    for (const table of ["rate_counters", "rate_leases"]) {
      const explained = await pool.query(
        `explain delete from ${table} where expires_at < $1 and ctid = any(array(
           select ctid from ${table} where expires_at < $1 limit $2 for update skip locked))`,
        [clock.now(), 1000],
      );
      const text = explained.rows.map((row) => row["QUERY PLAN"]).join("\n");
      expect(text, text).not.toContain("Seq Scan");
      expect(text, text).toContain(`${table}_by_expiry`);
    }
  });
});

describe("the expiry index and the take", () => {
  test("a take inside its window is a HOT update; the first take of a new window is not", async () => {
    const client = new pg.Client({ connectionString: limiterDatabase.url, options: "-c search_path=gateway" });
    await client.connect();
    try {
      await client.query("begin");
      const limiter = new RateLimiter({ pool: client, leaseTtlMs: 60_000 });
      const updates = async () => {
        const { rows } = await client.query(
          `select n_tup_upd as updated, n_tup_hot_upd as hot from pg_stat_xact_user_tables where relname = 'rate_counters'`,
        );
        return { updated: Number(rows[0].updated), hot: Number(rows[0].hot) };
      };
      const subject = "secret_key:hot-path";
      await limiter.take(plan(subject), clock.now());
      const afterInsert = await updates();
      for (let i = 0; i < 5; i++) await limiter.take(plan(subject), clock.now());
      const inWindow = await updates();
      const buckets = tiers.secretProduction.buckets.length;
      expect(inWindow.updated - afterInsert.updated).toBe(5 * buckets);
      expect(inWindow.hot - afterInsert.hot).toBe(5 * buckets);

      // An hour on, the minute and hour windows start again (their expires_at moves), the day's does not.
      await limiter.take(plan(subject), new Date(clock.now().getTime() + 3_600_000));
      const nextWindow = await updates();
      expect(nextWindow.updated - inWindow.updated).toBe(buckets);
      expect(nextWindow.hot - inWindow.hot).toBeLessThan(buckets);
      await client.query("rollback");
    } finally {
      await client.end();
    }
  });
});
