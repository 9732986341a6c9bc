import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { basename } from "node:path";
import { fileURLToPath } from "node:url";
import type pg from "pg";
import type { Logger } from "./logger.ts";

/**
 * A stored function (or any other definition PostgreSQL replaces in place) whose one home is a `.sql`
 * file beside the TypeScript module that calls it. Unlike a migration it is repeatable: whenever its
 * text changes it is applied again, so the file is always what runs. Its SQL must therefore be safe to
 * apply over an older version (`create or replace function …`); when a signature changes, the file
 * drops the old signature itself (`drop function if exists name(old argument types);`).
 */
export interface StoredDefinition {
  /** Unique within the schema: the file's name without `.sql`. */
  name: string;
  sql: string;
}

/** The definition in a `.sql` file, e.g. `sqlDefinition(new URL("./decide-rate-limits.sql", import.meta.url))`. */
export function sqlDefinition(file: URL): StoredDefinition {
  const path = fileURLToPath(file);
  return { name: basename(path, ".sql"), sql: readFileSync(path, "utf8") };
}

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");

/** The definitions whose text differs from the one last applied in `schema` (all of them before the first). */
export async function staleStoredDefinitions(
  client: pg.ClientBase,
  schema: string,
  definitions: readonly StoredDefinition[],
): Promise<string[]> {
  if (definitions.length === 0) return [];
  const table = `${client.escapeIdentifier(schema)}."stored_definitions"`;
  const { rows } = await client.query<{ present: boolean }>("select to_regclass($1) is not null as present", [table]);
  const applied = rows[0]?.present
    ? new Map(
        (await client.query<{ name: string; sha256: string }>(`select name, sha256 from ${table}`)).rows.map((row) => [
          row.name,
          row.sha256,
        ]),
      )
    : new Map<string, string>();
  return definitions
    .filter((definition) => applied.get(definition.name) !== sha256(definition.sql))
    .map((definition) => definition.name);
}

/**
 * Applies every definition whose text differs from the one last applied in `schema`, after the
 * schema's migrations (so a definition may use every table). One transaction, under an advisory lock
 * per schema: replicas that start together wait for each other, and the later ones find nothing left
 * to do. The bookkeeping table `stored_definitions` keeps each definition's name and SHA-256.
 */
export async function applyStoredDefinitions(options: {
  client: pg.ClientBase;
  schema: string;
  definitions: readonly StoredDefinition[];
  logger: Logger;
}): Promise<string[]> {
  const { client, definitions, logger } = options;
  if (definitions.length === 0) return [];
  const schema = client.escapeIdentifier(options.schema);
  await client.query("begin");
  try {
    await client.query("select pg_advisory_xact_lock(hashtext($1))", [`stored-definitions:${options.schema}`]);
    await client.query(`set local search_path to ${schema}`);
    await client.query(`create table if not exists ${schema}."stored_definitions" (
      "name" text primary key,
      "sha256" text not null,
      "applied_at" timestamptz not null default now())`);
    const { rows } = await client.query<{ name: string; sha256: string }>(
      `select name, sha256 from ${schema}."stored_definitions"`,
    );
    const applied = new Map(rows.map((row) => [row.name, row.sha256]));
    const changed = definitions.filter((definition) => applied.get(definition.name) !== sha256(definition.sql));
    for (const definition of changed) {
      await client.query(definition.sql);
      await client.query(
        `insert into ${schema}."stored_definitions" (name, sha256) values ($1, $2)
         on conflict (name) do update set sha256 = excluded.sha256, applied_at = now()`,
        [definition.name, sha256(definition.sql)],
      );
    }
    await client.query("commit");
    if (changed.length > 0)
      logger.info("stored definitions applied", { schema: options.schema, definitions: changed.map((d) => d.name) });
    return changed.map((definition) => definition.name);
  } catch (error) {
    await client.query("rollback");
    throw error;
  }
}
