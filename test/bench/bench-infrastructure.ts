import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startInfrastructure } from "@svc/local-mesh/infrastructure";
import { type ServiceName, startMesh } from "@svc/local-mesh/mesh";
import pg from "pg";

/** A throwaway Postgres, NATS and (part of) the mesh for one benchmark script; everything goes at stop. */
export async function startBenchMesh(only: ServiceName[]) {
  const dir = mkdtempSync(join(tmpdir(), "svc-bench-"));
  // As root, PostgreSQL runs as the postgres user, which must be able to enter the data dir's parent.
  chmodSync(dir, 0o755);
  const infrastructure = await startInfrastructure({ dir, durable: false });
  const client = new pg.Client({ connectionString: infrastructure.postgresUrl });
  await client.connect();
  await client.query("create database bench");
  await client.end();
  const databaseUrl = new URL(infrastructure.postgresUrl);
  databaseUrl.pathname = "/bench";
  const mesh = await startMesh({
    env: {
      SVC_DATABASE_URL: databaseUrl.toString(),
      SVC_NATS_URL: infrastructure.natsUrl,
      SVC_LOG_LEVEL: "warn",
      // The limiter still decides every request; a limit no benchmark reaches keeps it from refusing them.
      GATEWAY_RATE_LIMIT_ANONYMOUS_PER_MINUTE: "1000000000",
    },
    ports: "free",
    only,
    log: () => {},
  });
  return {
    ...mesh,
    databaseUrl: databaseUrl.toString(),
    natsUrl: infrastructure.natsUrl,
    async stop() {
      await mesh.stop();
      await infrastructure.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Runs `task` with `concurrency` loops in flight until `durationMs` passes; returns completed operations per second. */
export async function measureThroughput(
  concurrency: number,
  durationMs: number,
  task: (i: number) => Promise<void>,
): Promise<number> {
  let done = 0;
  let next = 0;
  const deadline = performance.now() + durationMs;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < deadline) {
        await task(next++);
        done++;
      }
    }),
  );
  return done / ((performance.now() - started) / 1000);
}

/** The middle value (the upper one of an even count), as every benchmark reports its rounds. */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}
