import { randomBytes } from "node:crypto";
import pg from "pg";
import { inject } from "vitest";

export type TestDatabase = { url: string; name: string; drop(): Promise<void> };

export function postgresUrl(): string {
  return inject("postgresUrl");
}

export function natsUrl(): string {
  return inject("natsUrl");
}

/** A short token, unique per call, safe in NATS stream names, subjects and SQL identifiers. */
export function uniqueName(label: string): string {
  const safeLabel = label
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "_")
    .slice(0, 40);
  return `${safeLabel}_${randomBytes(5).toString("hex")}`;
}

/** A fresh database on the shared server, so test files never see each other's rows. */
export async function createTestDatabase(label: string): Promise<TestDatabase> {
  const name = `t_${uniqueName(label)}`;
  await asSuperuser((client) => client.query(`CREATE DATABASE ${client.escapeIdentifier(name)}`));
  const url = new URL(postgresUrl());
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    name,
    drop: async () => {
      await asSuperuser(async (client) => {
        // Connections still closing go first: one that FORCE terminates while its pool is ending has no
        // error listener left, and its "terminating connection" failed a CI run as an uncaught error.
        for (let waited = 0; waited < 2000; waited += 20) {
          const { rows } = await client.query<{ n: number }>(
            "select count(*)::int as n from pg_stat_activity where datname = $1",
            [name],
          );
          if (rows[0]?.n === 0) break;
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
        await client.query(`DROP DATABASE IF EXISTS ${client.escapeIdentifier(name)} WITH (FORCE)`);
      });
    },
  };
}

async function asSuperuser(work: (client: pg.Client) => Promise<unknown>): Promise<void> {
  const client = new pg.Client({ connectionString: postgresUrl() });
  await client.connect();
  try {
    await work(client);
  } finally {
    await client.end();
  }
}
