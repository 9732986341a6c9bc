import { createHash } from "node:crypto";
import { ManualClock } from "@svc/platform";
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { RateLimiter } from "../src/rate-limits/rate-limiter.ts";
import { anonymousTier } from "../src/rate-limits/rate-tiers.ts";
import { openLimiterDatabase } from "./limiter-database.ts";

/**
 * The count statement (rate-limits/count-statement.ts) on the real PostgreSQL: a batch in which every
 * request fits is decided by it alone; one that would go over rolls it back and is decided in order by
 * `decide_rate_limits`, exactly, with nothing counted or recorded twice; a counter found full sends the
 * next batches of its window straight to `decide_rate_limits`; and limiters on separate pools (replicas)
 * racing for one limit allow exactly the limit between them.
 */

// 12:00:03 UTC: the minute window ends in 57 s.
const clock = new ManualClock("2026-10-20T12:00:03Z");

let limiterDatabase: Awaited<ReturnType<typeof openLimiterDatabase>>;
let pools: pg.Pool[];

/** A real pool whose statements' names are noted, in order. */
function notingPool(pool: pg.Pool): { pool: Pick<pg.Pool, "query">; names: string[] } {
  const names: string[] = [];
  const query = ((config: pg.QueryConfig) => {
    names.push(config.name ?? config.text);
    return pool.query(config);
  }) as pg.Pool["query"];
  return { pool: { query }, names };
}

let sequence = 0;
const tokenCheck = () => ({
  payloadHash: createHash("sha256").update(`count statement ${++sequence}`).digest(),
  expiresAt: new Date(clock.now().getTime() + 120_000),
});
const ipPlan = (ip: string, perMinute: number) => ({
  tier: anonymousTier(perMinute),
  subject: `ip:${ip}`,
  clientIp: ip,
});
const counted = async (ip: string) =>
  Number(
    (await pools[0]!.query(`select count from rate_counters where subject = $1`, [`ip:${ip}|ip:${ip}`])).rows[0]?.count,
  );
const recorded = async (hashes: Buffer[]) =>
  Number(
    (await pools[0]!.query(`select count(*) as n from token_checks where payload_hash = any($1::bytea[])`, [hashes]))
      .rows[0].n,
  );

const count = "count_rate_limits_and_record_checks";
const inOrder = "decide_rate_limits_and_record_checks";

beforeAll(async () => {
  limiterDatabase = await openLimiterDatabase("rate_count", 2);
  pools = limiterDatabase.pools;
});
afterAll(async () => {
  await limiterDatabase?.close();
});

describe("the count statement", () => {
  test("a batch in which every request fits is one count statement: counted, recorded, each request's counts", async () => {
    const { pool, names } = notingPool(pools[0]!);
    const limiter = new RateLimiter({ pool, leaseTtlMs: 60_000 });
    const checks = [tokenCheck(), tokenCheck(), tokenCheck()];
    const answers = await Promise.all(
      checks.map((check) => limiter.decide(ipPlan("192.0.2.1", 5), clock.now(), check)),
    );
    expect(names).toEqual([count]);
    expect(answers.map((a) => [a.first, a.decision?.allowed, a.decision?.buckets[0]?.remaining])).toEqual([
      [true, true, 4],
      [true, true, 3],
      [true, true, 2],
    ]);
    expect(await counted("192.0.2.1")).toBe(3);
    expect(await recorded(checks.map((c) => c.payloadHash))).toBe(3);
  });

  test("a batch that would go over rolls back and is decided in order: exactly the limit, the refused unrecorded", async () => {
    const { pool, names } = notingPool(pools[0]!);
    const limiter = new RateLimiter({ pool, leaseTtlMs: 60_000 });
    const checks = Array.from({ length: 5 }, () => tokenCheck());
    const answers = await Promise.all(
      checks.map((check) => limiter.decide(ipPlan("192.0.2.2", 3), clock.now(), check)),
    );
    expect(names).toEqual([count, inOrder]);
    expect(answers.map((a) => a.decision?.allowed)).toEqual([true, true, true, false, false]);
    expect(answers.map((a) => a.first)).toEqual([true, true, true, undefined, undefined]);
    expect(answers[4]!.decision?.buckets[0]).toMatchObject({ remaining: 0, full: true });
    expect(await counted("192.0.2.2")).toBe(3);
    expect(await recorded(checks.map((c) => c.payloadHash))).toBe(3);
  });

  test("a counter found full skips the count statement until its window ends", async () => {
    const { pool, names } = notingPool(pools[0]!);
    const limiter = new RateLimiter({ pool, leaseTtlMs: 60_000 });
    const plan = ipPlan("192.0.2.3", 2);
    await Promise.all([0, 1].map(() => limiter.take(plan, clock.now())));
    expect(names).toEqual([count]);
    expect((await limiter.take(plan, clock.now())).allowed).toBe(false);
    expect((await limiter.take(ipPlan("192.0.2.4", 2), clock.now())).allowed).toBe(true);
    expect(names).toEqual([count, inOrder, count]);

    const nextMinute = new Date(clock.now().getTime() + 57_000);
    expect((await limiter.take(plan, nextMinute)).allowed).toBe(true);
    expect(names).toEqual([count, inOrder, count, count]);
  });

  test("limiters on separate pools (replicas) racing for one limit allow exactly the limit", async () => {
    const limiters = pools.map((pool) => new RateLimiter({ pool, leaseTtlMs: 60_000 }));
    const plan = ipPlan("192.0.2.5", 25);
    // Four requests a turn, so each limiter sends several batches, most of which fit, while the other's run.
    const pending = [];
    for (let i = 0; i < 60; i++) {
      pending.push(limiters[i % 2]!.decide(plan, clock.now(), tokenCheck()));
      if (i % 4 === 3) await new Promise((resolve) => setImmediate(resolve));
    }
    const answers = await Promise.all(pending);
    expect(answers.filter((a) => a.decision?.allowed)).toHaveLength(25);
    expect(answers.filter((a) => a.first)).toHaveLength(25);
    expect(await counted("192.0.2.5")).toBe(25);
  });
});
