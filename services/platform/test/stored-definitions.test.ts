import { createHash } from "node:crypto";
import {
  applyStoredDefinitions,
  createLogger,
  OutboxEvent,
  openDatabase,
  outboxMigrations,
  type StoredDefinition,
  sqlDefinition,
} from "@svc/platform";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../../../test/harness/index.ts";

const logger = createLogger("platform-test", {}, "error");

/**
 * A definition that also records each time it is applied, so the tests count applications instead of
 * guessing them from the function's text.
 */
const greeting = (text: string): StoredDefinition => ({
  name: "greet",
  sql: `create or replace function greet() returns text language sql as $$ select '${text}' $$;
        insert into applications (text) values ('${text}');`,
});

describe("stored definitions", () => {
  let db: TestDatabase;
  const clients: pg.Client[] = [];
  const connect = async () => {
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    clients.push(client);
    return client;
  };
  let client: pg.Client;
  const apply = (definitions: StoredDefinition[], on = client) =>
    applyStoredDefinitions({ client: on, schema: "defs", definitions, logger });
  const applications = async () =>
    (await client.query<{ text: string }>("select text from defs.applications order by id")).rows.map((r) => r.text);
  const greet = async () => (await client.query<{ greet: string }>("select defs.greet()")).rows[0]?.greet;

  beforeAll(async () => {
    db = await createTestDatabase("stored_definitions");
    client = await connect();
    await client.query("create schema defs");
    await client.query("create table defs.applications (id serial primary key, text text not null)");
  });
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.end()));
    await db?.drop();
  });

  it("applies a new definition in the schema and records its name and SHA-256", async () => {
    expect(await apply([greeting("hello")])).toEqual(["greet"]);
    expect(await greet()).toBe("hello");
    const { rows } = await client.query("select name, sha256 from defs.stored_definitions");
    expect(rows).toEqual([{ name: "greet", sha256: createHash("sha256").update(greeting("hello").sql).digest("hex") }]);
  });

  it("does not apply it again while its text is unchanged", async () => {
    expect(await apply([greeting("hello")])).toEqual([]);
    expect(await applications()).toEqual(["hello"]);
  });

  it("applies it again when its text changes, replacing what runs", async () => {
    expect(await apply([greeting("hello again")])).toEqual(["greet"]);
    expect(await greet()).toBe("hello again");
    expect(await applications()).toEqual(["hello", "hello again"]);
  });

  it("applies a changed definition once when several replicas start together", async () => {
    const replicas = await Promise.all(Array.from({ length: 4 }, connect));
    const applied = await Promise.all(replicas.map((replica) => apply([greeting("together")], replica)));
    expect(applied.flat()).toEqual(["greet"]);
    expect(await applications()).toEqual(["hello", "hello again", "together"]);
  });

  it("applies nothing of a batch with a failing definition, and fails the start", async () => {
    const broken = {
      name: "broken",
      sql: "create or replace function broken() returns int language sql as $$ nope $$",
    };
    await expect(apply([greeting("lost"), broken])).rejects.toThrow();
    expect(await greet()).toBe("together");
    expect(await applications()).toEqual(["hello", "hello again", "together"]);
    expect((await client.query("select name from defs.stored_definitions")).rows).toEqual([{ name: "greet" }]);
  });

  it("reads a definition from its .sql file, named by the file", () => {
    const definition = sqlDefinition(new URL("./fixtures/count-greetings.sql", import.meta.url));
    expect(definition.name).toBe("count-greetings");
    expect(definition.sql).toContain("create or replace function count_greetings()");
  });

  it("is applied by openDatabase after the migrations, once for replicas that open together", async () => {
    const definition = sqlDefinition(new URL("./fixtures/count-greetings.sql", import.meta.url));
    const open = () =>
      openDatabase({
        url: db.url,
        schema: "opened",
        entities: [OutboxEvent],
        migrations: outboxMigrations,
        storedDefinitions: [definition],
        logger,
        poolSize: 1,
      });
    const orms = await Promise.all([open(), open(), open()]);
    try {
      const em = orms[0]!.em.fork();
      expect(await em.execute("select count_greetings() as n")).toEqual([{ n: 0 }]);
      expect(await em.execute("select name from stored_definitions")).toEqual([{ name: "count-greetings" }]);
    } finally {
      await Promise.all(orms.map((orm) => orm.close(true)));
    }
  });
});
