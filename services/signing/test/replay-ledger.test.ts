import { randomBytes } from "node:crypto";
import type { MikroORM } from "@mikro-orm/postgresql";
import { openDatabase } from "@svc/platform";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../../../test/harness/index.ts";
import { migrations } from "../src/migrations/index.ts";
import { databaseReplayLedger, type LedgerCheck } from "../src/replay-ledger.ts";
import { SigningKey } from "../src/signing-key.entity.ts";
import { TokenCheck } from "../src/token-check.entity.ts";
import { memoryLogger } from "./support.ts";

describe("the replay ledger in PostgreSQL", () => {
  let db: TestDatabase;
  let orm: MikroORM;
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
  });
  afterAll(async () => {
    await orm?.close();
    await db?.drop();
  });

  it("of copies of a token in one call only the first listed is first, and later calls see them all", async () => {
    const ledger = databaseReplayLedger(orm);
    const [a, b, c] = [check(), check(), check()];
    expect(await ledger.recordChecks([a, b, a], checkedAt)).toEqual([true, true, false]);
    expect(await ledger.recordChecks([b, c, c, a], checkedAt)).toEqual([false, true, false, false]);
    expect(await ledger.recordChecks([], checkedAt)).toEqual([]);
  });

  it("concurrent writes that share tokens in opposite orders never deadlock, and each token is first exactly once", async () => {
    const ledger = databaseReplayLedger(orm);
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
});
