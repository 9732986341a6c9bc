import { randomBytes } from "node:crypto";
import type { MikroORM } from "@mikro-orm/postgresql";
import { deleteDueBatch, dueBatchStatement, openDatabase, openStatementPool } from "@svc/platform";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../../../test/harness/index.ts";
import { planOf } from "../../../test/harness/plans.ts";
import { migrations } from "../src/migrations/index.ts";
import { databaseReplayLedger, type LedgerCheck, ledgerPruneRule } from "../src/replay-ledger.ts";
import { SigningKey } from "../src/signing-key.entity.ts";
import { TokenCheck } from "../src/token-check.entity.ts";
import { memoryLogger } from "./support.ts";

describe("the replay ledger in PostgreSQL", () => {
  let db: TestDatabase;
  let orm: MikroORM;
  let statements: pg.Pool;
  const checkedAt = new Date("2026-11-20T10:00:00Z");
  const check = (): LedgerCheck => ({ tokenKey: randomBytes(32), expiresAt: new Date("2026-11-20T10:02:00Z") });

  beforeAll(async () => {
    db = await createTestDatabase("signing_ledger");
    orm = await openDatabase({
      url: db.url,
      schema: "signing",
      entities: [SigningKey, TokenCheck],
      migrations,
      logger: memoryLogger(),
    });
    statements = openStatementPool({ url: db.url, schema: "signing", max: 4, logger: memoryLogger() });
  });
  afterAll(async () => {
    await statements?.end();
    await orm?.close();
    await db?.drop();
  });

  it("of copies of a token in one call only the first listed is first, and later calls see them all", async () => {
    const ledger = databaseReplayLedger(orm, statements, 1000);
    const [a, b, c] = [check(), check(), check()];
    expect(await ledger.recordChecks([a, b, a], checkedAt)).toEqual([true, true, false]);
    expect(await ledger.recordChecks([b, c, c, a], checkedAt)).toEqual([false, true, false, false]);
    expect(await ledger.recordChecks([], checkedAt)).toEqual([]);
  });

  it("concurrent writes that share tokens in opposite orders never deadlock, and each token is first exactly once", async () => {
    const ledger = databaseReplayLedger(orm, statements, 1000);
    // Rows taken in call order would lock in opposite orders: with a few rounds, a deadlock is near certain.
    for (let round = 0; round < 5; round++) {
      const checks = Array.from({ length: 2000 }, check);
      const orders = [
        checks,
        [...checks].reverse(),
        checks.map((_, i) => checks[(i * 7) % checks.length]!),
        checks.map((_, i) => checks[(i * 13 + 1000) % checks.length]!),
      ];
      const results = await Promise.all(orders.map((order) => ledger.recordChecks(order, checkedAt)));
      const firsts = new Map<LedgerCheck, number>();
      for (const [i, answers] of results.entries()) {
        for (const [j, first] of answers.entries()) {
          const check = orders[i]![j]!;
          if (first) firsts.set(check, (firsts.get(check) ?? 0) + 1);
        }
      }
      expect(firsts.size).toBe(checks.length);
      expect([...firsts.values()].every((count) => count === 1)).toBe(true);
    }
  });

  describe("pruning", () => {
    // Before the tokens of the tests above expire, so only the rows seeded here are ever due.
    const pruneAt = new Date("2026-11-01T00:00:00Z");
    let sql: pg.Client;
    beforeAll(async () => {
      sql = new pg.Client({ connectionString: db.url, options: "-c search_path=signing" });
      await sql.connect();
    });
    afterAll(async () => {
      await sql?.end();
    });
    const seed = async (expiresAt: Date, n: number) =>
      sql.query(
        `insert into token_check (payload_hash, checked_at, expires_at)
           select sha256((random()::text || i)::bytea), $1, $1 from generate_series(1, $2) as i`,
        [expiresAt, n],
      );
    const left = async (expiresAt: Date) =>
      (await sql.query(`select count(*)::int as n from token_check where expires_at = $1`, [expiresAt])).rows[0].n;

    it("deletes rows whose tokens expired before the instant, in batches of at most its size", async () => {
      const due = new Date(pruneAt.getTime() - 1);
      await seed(due, 7);
      await seed(pruneAt, 2);
      expect(await deleteDueBatch(orm, ledgerPruneRule(pruneAt), 3)).toBe(3);
      expect(await left(due)).toBe(4);
      expect(await databaseReplayLedger(orm, statements, 3).prune(pruneAt)).toBe(4);
      expect(await left(due)).toBe(0);
      expect(await left(pruneAt)).toBe(2);
    });

    it("reads only the due rows on the expiry index when the ledger has grown", async () => {
      await seed(new Date(pruneAt.getTime() + 120_000), 20_000);
      await sql.query("analyze token_check");
      const rule = ledgerPruneRule(pruneAt);
      const plan = await planOf(sql, dueBatchStatement(rule), [rule.before, 1000]);
      expect(plan, plan).not.toContain("Seq Scan");
      expect(plan, plan).toContain("token_check_expires_at");
    });
  });
});
