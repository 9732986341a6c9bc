import { createLogger, inTransaction, openStatementPool } from "@svc/platform";
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../../../test/harness/index.ts";

const logger = createLogger("platform-test", {}, "error");

describe("statement pool transactions (inTransaction)", () => {
  let db: TestDatabase;
  let pool: pg.Pool;

  beforeAll(async () => {
    db = await createTestDatabase("statement_pool");
    const setup = openStatementPool({ url: db.url, schema: "public", max: 1, logger });
    await setup.query("create schema pool_test");
    await setup.end();
    pool = openStatementPool({ url: db.url, schema: "pool_test", max: 2, logger });
    await pool.query("create table notes (text text primary key)");
  });
  afterAll(async () => {
    await pool?.end();
    await db?.drop();
  });

  const notes = async () =>
    (await pool.query<{ text: string }>("select text from notes order by text")).rows.map((r) => r.text);

  it("commits what the work wrote when it returns, and hands back its result", async () => {
    const result = await inTransaction(pool, async (client) => {
      await client.query("insert into notes values ($1), ($2)", ["a", "b"]);
      return "done";
    });
    expect(result).toBe("done");
    expect(await notes()).toEqual(["a", "b"]);
  });

  it("rolls back everything the work wrote when it throws, and rethrows its error", async () => {
    await expect(
      inTransaction(pool, async (client) => {
        await client.query("insert into notes values ($1)", ["c"]);
        throw new Error("changed my mind");
      }),
    ).rejects.toThrow("changed my mind");
    expect(await notes()).toEqual(["a", "b"]);
  });

  it("gives the connection back, so transactions can follow one another on a small pool", async () => {
    for (let i = 0; i < 5; i += 1) await inTransaction(pool, (client) => client.query("select 1"));
    expect(pool.totalCount).toBeLessThanOrEqual(2);
    expect(pool.idleCount).toBe(pool.totalCount);
  });
});
