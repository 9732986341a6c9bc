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
      await asSuperuser((client) =>
        client.query(`DROP DATABASE IF EXISTS ${client.escapeIdentifier(name)} WITH (FORCE)`),
      );
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
