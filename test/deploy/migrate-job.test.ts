import { execFile, spawn } from "node:child_process";
import { once } from "node:events";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { meshLayout } from "@svc/local-mesh/mesh";
import { freePort } from "@svc/local-mesh/process-tools";
import { Health, HealthCheckResponse_ServingStatus as ServingStatus } from "@svc/proto/grpc/health/v1/health_pb.js";
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

// Every test starts Node processes, each of which loads a whole service: seconds apiece on two busy cores.
describe("the migrate Job's containers (each entry point's --migrate-only)", { timeout: 60_000 }, () => {
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

  it("a pod under SVC_MIGRATIONS=job refuses to start before the Job ran, and after it serves, SERVING over gRPC health", async () => {
    const fresh = await createTestDatabase("migrate_job_pod");
    try {
      const [signing] = meshLayout;
      const port = await freePort();
      const env = {
        PATH: process.env.PATH ?? "",
        SVC_DATABASE_URL: fresh.url,
        SVC_MIGRATIONS: "job",
        SIGNING_PORT: String(port),
      };
      const refused = await promisify(execFile)(process.execPath, [signing.entry], { cwd: root, env }).then(
        () => ({ code: 0, stdout: "" }),
        (error: { code: number; stdout: string }) => error,
      );
      expect(refused.code).toBe(1);
      const failure = refused.stdout
        .trim()
        .split("\n")
        .map((line) => JSON.parse(line))
        .find((line) => line.msg === "start failed");
      expect(failure.error).toMatch(/^schema signing is behind this release \(migrations not applied: 0001_/);

      expect((await run(signing.entry, { SVC_DATABASE_URL: fresh.url })).code).toBe(0);
      const pod = spawn(process.execPath, [signing.entry], { cwd: root, env, stdio: ["ignore", "pipe", "inherit"] });
      try {
        for await (const line of createInterface({ input: pod.stdout }))
          if (JSON.parse(line).msg === "listening") break;
        const health = createClient(Health, createGrpcTransport({ baseUrl: `http://127.0.0.1:${port}` }));
        expect((await health.check({ service: "" })).status).toBe(ServingStatus.SERVING);
        expect((await health.check({ service: "svc.signing.v1.SigningService" })).status).toBe(ServingStatus.SERVING);
      } finally {
        pod.kill("SIGTERM");
        await once(pod, "exit");
      }
    } finally {
      await fresh.drop();
    }
  });
});
