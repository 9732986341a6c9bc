import { chmodSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { startNats } from "@svc/local-mesh/nats";
import { type RunningPostgres, startPostgres, stopPostgresImmediately } from "@svc/local-mesh/postgres";
import { freePort } from "@svc/local-mesh/process-tools";
import pg from "pg";
import type { FaultInfrastructure } from "./fault-suite.ts";

/**
 * PostgreSQL and nats-server of the suite's own, in `dir`, as `npm start` runs them (durable: an immediate
 * stop must lose nothing committed), each on a port it keeps across its restarts so the mesh's settings stay
 * true. Returns the suite's view of them and what stops both.
 */
export async function startOwnInfrastructure(dir: string): Promise<FaultInfrastructure & { stop(): Promise<void> }> {
  mkdirSync(dir, { recursive: true });
  // As root, PostgreSQL runs as the postgres user, which must be able to enter the directory.
  chmodSync(dir, 0o755);
  const dataDir = join(dir, "postgres");
  const storeDir = join(dir, "nats");
  const [postgresPort, natsPort] = [await freePort(), await freePort()];
  let postgres: RunningPostgres | undefined = await startPostgres({ dataDir, port: postgresPort, durable: true });
  let nats = await startNats({ storeDir, port: natsPort });

  const client = new pg.Client({ connectionString: postgres.url });
  await client.connect();
  try {
    const found = await client.query("select 1 from pg_database where datname = 'faults'");
    if (found.rowCount === 0) await client.query("create database faults");
  } finally {
    await client.end();
  }
  const databaseUrl = new URL(postgres.url);
  databaseUrl.pathname = "/faults";

  return {
    env: { SVC_DATABASE_URL: databaseUrl.toString(), SVC_NATS_URL: nats.url },
    postgres: {
      crash: async () => {
        await stopPostgresImmediately(dataDir);
        postgres = undefined;
      },
      start: async () => {
        postgres = await startPostgres({ dataDir, port: postgresPort, durable: true });
      },
    },
    nats: {
      stop: () => nats.stop(),
      start: async () => {
        nats = await startNats({ storeDir, port: natsPort });
      },
    },
    stop: async () => {
      await Promise.all([postgres?.stop(), nats.stop()]);
    },
  };
}
