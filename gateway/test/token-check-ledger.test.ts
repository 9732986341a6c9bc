import { createHash } from "node:crypto";
import type { AttestationLedgerCheck } from "@svc/contracts/attestation";
import { ManualClock } from "@svc/platform";
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { RateLimiter } from "../src/rate-limits/rate-limiter.ts";
import { anonymousTier } from "../src/rate-limits/rate-tiers.ts";
import { ledgerRetentionMarginMs } from "../src/rate-limits/token-checks.ts";
import { openLimiterDatabase } from "./limiter-database.ts";

/**
 * The ledger of first token checks in the gateway's schema, on the real PostgreSQL: a check is recorded
 * in the statement that decides its request's rate limits, only when the request is allowed; exactly
 * one check of a token is the first, within a statement and across limiters on separate pools (as
 * replicas are); rows go once their token expired more than the margin ago.
 */

// 12:00:03 UTC, inside one minute window.
const clock = new ManualClock("2026-10-20T12:00:03Z");

let limiterDatabase: Awaited<ReturnType<typeof openLimiterDatabase>>;
let pools: pg.Pool[];

let sequence = 0;
/** A token's check, as attestation.ts makes it: the payload's SHA-256 and the token's expiry. */
const tokenCheck = (expiresInMs = 120_000): AttestationLedgerCheck => ({
  payloadHash: createHash("sha256").update(`payload ${++sequence}`).digest(),
  expiresAt: new Date(clock.now().getTime() + expiresInMs),
});
const ipPlan = (ip: string, perMinute: number) => ({
  tier: anonymousTier(perMinute),
  subject: `ip:${ip}`,
  clientIp: ip,
});
const rows = async (pool: pg.Pool, check: AttestationLedgerCheck) =>
  Number(
    (await pool.query(`select count(*) as n from token_checks where payload_hash = $1`, [check.payloadHash])).rows[0].n,
  );

beforeAll(async () => {
  limiterDatabase = await openLimiterDatabase("token_checks", 2);
  pools = limiterDatabase.pools;
});
afterAll(async () => {
  await limiterDatabase?.close();
});

describe("the token-check ledger in the rate decision", () => {
  test("the first check of a token is first, every later one a replay, and each request is counted", async () => {
    const limiter = new RateLimiter({ pool: pools[0]!, leaseTtlMs: 60_000 });
    const check = tokenCheck();
    const first = await limiter.decide(ipPlan("192.0.2.1", 10), clock.now(), check);
    expect(first.first).toBe(true);
    expect(first.decision?.allowed).toBe(true);
    expect(first.decision?.buckets).toMatchObject([{ name: "per_minute", limit: 10, remaining: 9 }]);
    const again = await limiter.decide(ipPlan("192.0.2.2", 10), clock.now(), check);
    expect(again).toMatchObject({ first: false, decision: { allowed: true } });
    expect(await rows(pools[0]!, check)).toBe(1);
  });

  test("a refused request records nothing: the token's next allowed check is still the first", async () => {
    const limiter = new RateLimiter({ pool: pools[0]!, leaseTtlMs: 60_000 });
    const full = ipPlan("192.0.2.10", 1);
    expect((await limiter.take(full, clock.now())).allowed).toBe(true);
    const check = tokenCheck();
    const refused = await limiter.decide(full, clock.now(), check);
    expect(refused.decision?.allowed).toBe(false);
    expect(refused.first).toBeUndefined();
    expect(await rows(pools[0]!, check)).toBe(0);
    expect((await limiter.decide(ipPlan("192.0.2.11", 1), clock.now(), check)).first).toBe(true);
  });

  test("copies of one token decided in one statement: only the first allowed copy is first", async () => {
    const limiter = new RateLimiter({ pool: pools[0]!, leaseTtlMs: 60_000 });
    const check = tokenCheck();
    const other = tokenCheck();
    // Submitted in one turn, so one statement decides them all; the first copy's address is full.
    const full = ipPlan("192.0.2.20", 1);
    await limiter.take(full, clock.now());
    const answers = await Promise.all([
      limiter.decide(full, clock.now(), check),
      limiter.decide(ipPlan("192.0.2.21", 10), clock.now(), check),
      limiter.decide(ipPlan("192.0.2.22", 10), clock.now(), other),
      limiter.decide(ipPlan("192.0.2.23", 10), clock.now(), check),
      limiter.decide(undefined, clock.now(), other),
    ]);
    expect(answers.map((answer) => answer.first)).toEqual([undefined, true, true, false, false]);
    expect(answers.map((answer) => answer.decision?.allowed)).toEqual([false, true, true, true, undefined]);
  });

  test("without a rate limit (anonymous requests uncounted) the ledger alone decides", async () => {
    const limiter = new RateLimiter({ pool: pools[0]!, leaseTtlMs: 60_000 });
    const check = tokenCheck();
    const answers = await Promise.all([0, 1, 2].map(() => limiter.decide(undefined, clock.now(), check)));
    expect(answers).toEqual([
      { decision: undefined, first: true },
      { decision: undefined, first: false },
      { decision: undefined, first: false },
    ]);
  });

  test("limiters on separate pools (replicas) checking the same tokens at once: exactly one first per token", async () => {
    const limiters = pools.map((pool) => new RateLimiter({ pool, leaseTtlMs: 60_000 }));
    const checks = Array.from({ length: 20 }, () => tokenCheck());
    const answers = await Promise.all(
      checks.flatMap((check, t) =>
        Array.from({ length: 6 }, (_, copy) =>
          limiters[copy % 2]!.decide(ipPlan(`198.51.100.${copy}`, 1000), clock.now(), check).then((answer) => ({
            t,
            first: answer.first,
          })),
        ),
      ),
    );
    for (let t = 0; t < checks.length; t++)
      expect(answers.filter((answer) => answer.t === t && answer.first)).toHaveLength(1);
  });
});

describe("the ledger's sweep", () => {
  test("deletes a row only once its token expired more than the margin ago", async () => {
    const limiter = new RateLimiter({ pool: pools[0]!, leaseTtlMs: 60_000 });
    await pools[0]!.query("delete from token_checks");
    const check = tokenCheck(60_000);
    expect((await limiter.decide(undefined, clock.now(), check)).first).toBe(true);
    const dueAt = check.expiresAt.getTime() + ledgerRetentionMarginMs;

    await limiter.sweep(new Date(dueAt));
    expect(await rows(pools[0]!, check)).toBe(1);
    expect((await limiter.decide(undefined, clock.now(), check)).first).toBe(false);
    await limiter.sweep(new Date(dueAt + 1));
    expect(await rows(pools[0]!, check)).toBe(0);
  });

  test("reads only the due rows on the expiry index when the ledger has grown", async () => {
    await pools[0]!.query(
      `insert into token_checks (payload_hash, checked_at, expires_at)
         select sha256(i::text::bytea), $1, $1 from generate_series(1, 20000) as i`,
      [new Date(clock.now().getTime() + 120_000)],
    );
    await pools[0]!.query("analyze token_checks");
    const explained = await pools[0]!.query(
      `explain delete from token_checks where expires_at < $1 and ctid = any(array(
         select ctid from token_checks where expires_at < $1 limit $2 for update skip locked))`,
      [clock.now(), 1000],
    );
    const text = explained.rows.map((row) => row["QUERY PLAN"]).join("\n");
    expect(text, text).not.toContain("Seq Scan");
    expect(text, text).toContain("token_checks_by_expiry");
  });
});
