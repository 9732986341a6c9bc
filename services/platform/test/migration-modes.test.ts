import {
  ConfigError,
  createLogger,
  Migration,
  migrateSchema,
  OutboxEvent,
  openDatabase,
  type StoredDefinition,
} from "@svc/platform";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../../../test/harness/index.ts";

const logger = createLogger("platform-test", {}, "error");

class CreateNotes extends Migration {
  override async up(): Promise<void> {
    this.addSql("create table notes (text text primary key)");
  }
}
class IndexNotes extends Migration {
  override async up(): Promise<void> {
    this.addSql("create index notes_by_length on notes (length(text))");
  }
}
const first = { name: "0001_notes", class: CreateNotes };
const second = { name: "0002_notes_by_length", class: IndexNotes };
const counting = (text: string): StoredDefinition => ({
  name: "note_count",
  sql: `create or replace function note_count() returns bigint language sql as $$ select count(*) + 0 * length('${text}') from modes.notes $$;`,
});

describe("who applies a schema's migrations (SVC_MIGRATIONS)", () => {
  let db: TestDatabase;
  let client: pg.Client;
  const schema = "modes";
  const open = (migrations: (typeof first)[], definitions: StoredDefinition[], mode: "at-start" | "job") =>
    openDatabase({
      url: db.url,
      schema,
      entities: [OutboxEvent],
      migrations,
      storedDefinitions: definitions,
      logger,
      migrationMode: mode,
    });
  const migrate = (migrations: (typeof first)[], definitions: StoredDefinition[]) =>
    migrateSchema({
      envPrefix: "MODES",
      env: { SVC_DATABASE_URL: db.url },
      schema,
      entities: [OutboxEvent],
      migrations,
      storedDefinitions: definitions,
      logger,
    });
  const schemaExists = async () =>
    (await client.query("select 1 from pg_namespace where nspname = $1", [schema])).rowCount === 1;

  beforeAll(async () => {
    db = await createTestDatabase("migration_modes");
    client = new pg.Client({ connectionString: db.url });
    await client.connect();
  });
  afterAll(async () => {
    await client?.end();
    await db?.drop();
  });

  it("job: a process refuses to start on a schema nobody migrated, naming what is missing, and creates nothing", async () => {
    const refusal = await open([first], [counting("a")], "job").catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(ConfigError);
    expect((refusal as Error).message).toBe(
      "schema modes is behind this release (migrations not applied: 0001_notes; stored definitions not applied: " +
        "note_count); with SVC_MIGRATIONS=job the migrate Job (--migrate-only) applies them before the rollout",
    );
    expect(await schemaExists()).toBe(false);
  });

  it("--migrate-only's work reads only the database URL, applies migrations and definitions, and then a job-mode process starts", async () => {
    await migrate([first], [counting("a")]);
    const orm = await open([first], [counting("a")], "job");
    await orm.close();
    expect((await client.query("select modes.note_count() as n")).rows).toEqual([{ n: "0" }]);
  });

  it("job: a release with a new migration or a changed definition is refused until the Job ran, and the older release still starts", async () => {
    const refusal = await open([first, second], [counting("b")], "job").catch((error: unknown) => error);
    expect((refusal as Error).message).toContain(
      "(migrations not applied: 0002_notes_by_length; stored definitions not applied: note_count)",
    );
    await migrate([first, second], [counting("b")]);
    await (await open([first, second], [counting("b")], "job")).close();
    // A replica of the previous release restarting during the rollout finds its migrations applied.
    await (await open([first], [], "job")).close();
    const { rows } = await client.query("select name from modes.mikro_orm_migrations order by name");
    expect(rows.map((row) => row.name)).toEqual(["0001_notes", "0002_notes_by_length"]);
  });

  it("at-start (the default outside Kubernetes): the starting process applies what is pending itself", async () => {
    await client.query("drop schema modes cascade");
    await (await open([first, second], [counting("c")], "at-start")).close();
    expect((await client.query("select modes.note_count() as n")).rows).toEqual([{ n: "0" }]);
  });

  it("--migrate-only names a missing database URL setting instead of guessing one in production", async () => {
    const refusal = migrateSchema({
      envPrefix: "MODES",
      env: { SVC_DATABASE_URL: "not a url" },
      schema,
      entities: [OutboxEvent],
      migrations: [first],
      logger,
    });
    await expect(refusal).rejects.toThrow(/MODES_DATABASE_URL/);
  });
});
