import { chmodSync, existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type RunningPostgres, startPostgres } from "@svc/local-mesh/postgres";
import { freePort } from "@svc/local-mesh/process-tools";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cpuMicros, cpuMicrosSince, cpuReading, postgresProcesses } from "./process-cpu.ts";

// A server of its own: backends of other test files, exiting into the shared server's reading, would move it.
const dir = mkdtempSync(join(tmpdir(), "process-cpu-"));
let postgres: RunningPostgres;
const postgresUrl = () => postgres.url;
beforeAll(async () => {
  // As root, PostgreSQL runs as the postgres user, which must be able to enter the directory.
  chmodSync(dir, 0o755);
  postgres = await startPostgres({ dataDir: join(dir, "postgres"), port: await freePort(), durable: false });
});
afterAll(async () => {
  await postgres?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const busyBackend = async () => {
  const client = new pg.Client({ connectionString: postgresUrl() });
  await client.connect();
  const { rows } = await client.query<{ pid: number }>("select pg_backend_pid() as pid");
  const pid = String(rows[0]!.pid);
  await client.query("select count(*) from generate_series(1, 3000000)");
  return { client, pid };
};

describe("PostgreSQL's CPU reading", () => {
  it("counts a backend that started after the first reading and exited before the last", async () => {
    const before = cpuReading(postgresProcesses(postgresUrl()));
    const { client, pid } = await busyBackend();
    const used = cpuMicros([pid]);
    expect(used).toBeGreaterThan(0);
    await client.end();
    await expect.poll(() => existsSync(`/proc/${pid}`)).toBe(false);

    expect(cpuMicrosSince(before, postgresProcesses(postgresUrl()))).toBeGreaterThanOrEqual(used);
  });

  it("counts only what a backend of the first reading used since, once it has exited", async () => {
    const { client, pid } = await busyBackend();
    const before = cpuReading(postgresProcesses(postgresUrl()));
    expect(before.has(pid)).toBe(true);
    await client.query("select count(*) from generate_series(1, 3000000)");
    const usedSince = cpuMicros([pid]) - before.get(pid)!;
    await client.end();
    await expect.poll(() => existsSync(`/proc/${pid}`)).toBe(false);

    const since = cpuMicrosSince(before, postgresProcesses(postgresUrl()));
    expect(since).toBeGreaterThanOrEqual(usedSince);
    expect(since).toBeLessThan(usedSince + before.get(pid)!);
  });
});
