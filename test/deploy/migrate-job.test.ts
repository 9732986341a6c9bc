import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { meshLayout } from "@svc/local-mesh/mesh";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../harness/index.ts";

const root = fileURLToPath(new URL("../../", import.meta.url));
const schemaOf = (name: string) => name.replace("-", "_");

/** Runs an entry point as the migrate Job's container does: production, and nothing but the database URL. */
const run = (entry: string, env: Record<string, string>) =>
  promisify(execFile)(process.execPath, [entry, "--migrate-only"], {
    cwd: root,
    env: { PATH: process.env.PATH ?? "", SVC_DEPLOYMENT: "production", ...env },
  }).then(
    ({ stdout }) => ({ code: 0, lines: stdout.trim().split("\n") }),
    (error: { code: number; stdout: string }) => ({ code: error.code, lines: error.stdout.trim().split("\n") }),
  );

describe("the migrate Job's containers (each entry point's --migrate-only)", () => {
  let db: TestDatabase;
  let client: pg.Client;
  const appliedIn = async (schema: string) =>
    (await client.query<{ n: number }>(`select count(*)::int as n from ${schema}.mikro_orm_migrations`)).rows[0]?.n;

  beforeAll(async () => {
    db = await createTestDatabase("migrate_job");
    client = new pg.Client({ connectionString: db.url });
    await client.connect();
  });
  afterAll(async () => {
    await client?.end();
    await db?.drop();
  });

  it.each(meshLayout.map((s) => [s.name, s.entry] as const))(
    "%s migrates its schema with only SVC_DATABASE_URL, and exits 0",
    async (name, entry) => {
      const run1 = await run(entry, { SVC_DATABASE_URL: db.url });
      expect(run1.code).toBe(0);
      expect(run1.lines.map((line) => JSON.parse(line).msg)).toContain("migrated");
      expect(await appliedIn(schemaOf(name))).toBeGreaterThan(0);
    },
  );

  it("a second run of the Job finds nothing to do", async () => {
    const [signing] = meshLayout;
    expect((await run(signing.entry, { SVC_DATABASE_URL: db.url })).code).toBe(0);
    const applied = await appliedIn(signing.name);
    const again = await run(signing.entry, { SVC_DATABASE_URL: db.url });
    expect(again.code).toBe(0);
    expect(again.lines.map((line) => JSON.parse(line).msg)).toEqual(["migrated"]);
    expect(await appliedIn(signing.name)).toBe(applied);
  });

  it("fails with one structured line, and exit 1, when the database cannot be reached", async () => {
    const failed = await run(meshLayout[0].entry, { SVC_DATABASE_URL: "postgres://postgres@127.0.0.1:1/svc" });
    expect(failed.code).toBe(1);
    expect(failed.lines.map((line) => JSON.parse(line))).toEqual([
      expect.objectContaining({ level: "error", msg: "migration failed" }),
    ]);
  });
});
