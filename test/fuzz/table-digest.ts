import type pg from "pg";

/**
 * A digest of every row of every table in every schema of the mesh's database, to show that a batch of
 * refused requests changed nothing. Tables a refusal changes by design are left out, each with its reason.
 */
export const changedByRefusals: Readonly<Record<string, string>> = {
  "gateway.rate_counters":
    "the spec counts every request against its credential's buckets, refused or not (parse and authenticate run first, then the limiter counts)",
  "gateway.rate_leases": "the in_flight bucket takes a slot while a counted request runs, refused ones included",
  "webhook_dispatch.dispatcher_instances":
    "each dispatcher renews its heartbeat on the clock, whatever the requests: a beat inside a batch of refusals failed a CI run",
};

export type Digest = Record<string, string>;

export async function digestTables(database: pg.Client): Promise<Digest> {
  const { rows: tables } = await database.query<{ schema: string; name: string }>(
    `select table_schema as schema, table_name as name from information_schema.tables
     where table_type = 'BASE TABLE' and table_schema not in ('pg_catalog', 'information_schema')
     order by 1, 2`,
  );
  const digest: Digest = {};
  for (const { schema, name } of tables) {
    const qualified = `${schema}.${name}`;
    if (qualified in changedByRefusals) continue;
    const { rows } = await database.query<{ rows: string; md5: string }>(
      `select count(*) as rows, md5(coalesce(string_agg(t::text, '' order by t::text), '')) as md5
       from ${database.escapeIdentifier(schema)}.${database.escapeIdentifier(name)} t`,
    );
    digest[qualified] = `${rows[0]?.rows}:${rows[0]?.md5}`;
  }
  return digest;
}

/** Names of the tables whose digest differs (or that exist in only one of the two). */
export function changedTables(before: Digest, after: Digest): string[] {
  return [...new Set([...Object.keys(before), ...Object.keys(after)])].filter((t) => before[t] !== after[t]).sort();
}

/**
 * The digest once the mesh is quiet: work started by earlier accepted requests (an outbox row the relay
 * marks published, a message webhook-dispatch stores) finishes on its own; two equal digests 300 ms apart
 * mean it has.
 */
export async function settledDigest(database: pg.Client, timeoutMs = 30_000): Promise<Digest> {
  const deadline = Date.now() + timeoutMs;
  let previous = await digestTables(database);
  for (;;) {
    await new Promise((resolve) => setTimeout(resolve, 300));
    const current = await digestTables(database);
    const moving = changedTables(previous, current);
    if (moving.length === 0) return current;
    if (Date.now() > deadline) throw new Error(`the mesh never became quiet: ${moving.join(", ")} kept changing`);
    previous = current;
  }
}
