import type { EntitySchema, MigrationObject } from "@mikro-orm/core";
import { Migration, Migrator } from "@mikro-orm/migrations";
import { MikroORM, type Options } from "@mikro-orm/postgresql";
import pg from "pg";
import { ConfigError, commonSettings, loadConfig, type MigrationMode } from "./config.ts";
import type { Logger } from "./logger.ts";
import { applyStoredDefinitions, type StoredDefinition, staleStoredDefinitions } from "./stored-definitions.ts";

export { Migration };
export type Database = MikroORM;

export interface DatabaseOptions {
  url: string;
  /** The service's own schema: every table, and its migration ledger, lives there. */
  schema: string;
  entities: EntitySchema[];
  migrations: MigrationObject[];
  /** Stored functions from `.sql` files, applied after the migrations whenever their text changes. */
  storedDefinitions?: readonly StoredDefinition[];
  logger: Logger;
  poolSize?: number;
  /** Who applies the migrations (the `migrations` setting): `at-start` unless given. */
  migrationMode?: MigrationMode;
}

/**
 * One ORM per service, bound to the service's schema. Under `at-start` its migrations and then its stored
 * definitions are applied first; under `job` the migrate Job has applied them, and a schema behind this
 * release refuses the start, so no replica ever migrates.
 */
export async function openDatabase(options: DatabaseOptions): Promise<MikroORM> {
  if (options.migrationMode === "job") await requireMigrated(options);
  else await migrateDatabase(options);
  return MikroORM.init(ormOptions(options));
}

function ormOptions(options: DatabaseOptions): Options {
  return {
    clientUrl: options.url,
    // Every pooled connection resolves unqualified names in the service's schema, so raw SQL needs no prefix.
    driverOptions: { options: `-c search_path=${options.schema}` },
    schema: options.schema,
    entities: options.entities,
    extensions: [Migrator],
    pool: { min: 0, max: options.poolSize ?? 10 },
    allowGlobalContext: false,
    debug: false,
    schemaGenerator: { skipTables: ["mikro_orm_migrations"] },
    migrations: {
      migrationsList: options.migrations,
      schema: options.schema,
      snapshot: false,
      snapshotOnMigrate: false,
      transactional: true,
      allOrNothing: true,
      silent: true,
    },
  };
}

/**
 * Applies the schema's pending migrations, then its changed stored definitions. An advisory lock keeps
 * processes that migrate together (replicas starting at once, or a Job beside them) from racing.
 */
export async function migrateDatabase(options: DatabaseOptions): Promise<void> {
  const lock = new pg.Client({ connectionString: options.url });
  await lock.connect();
  try {
    await lock.query("select pg_advisory_lock(hashtext($1))", [`migrate:${options.schema}`]);
    await lock.query(`create schema if not exists "${options.schema}"`);
    const orm = await MikroORM.init({ ...ormOptions(options), pool: { min: 0, max: 1 } });
    try {
      const applied = await orm.migrator.up();
      if (applied.length > 0)
        options.logger.info("migrations applied", { schema: options.schema, migrations: applied.map((m) => m.name) });
    } finally {
      await orm.close(true);
    }
    await applyStoredDefinitions({
      client: lock,
      schema: options.schema,
      definitions: options.storedDefinitions ?? [],
      logger: options.logger,
    });
  } finally {
    await lock.end();
  }
}

async function requireMigrated(options: DatabaseOptions): Promise<void> {
  const client = new pg.Client({ connectionString: options.url });
  await client.connect();
  try {
    const ledger = `${client.escapeIdentifier(options.schema)}.mikro_orm_migrations`;
    const { rows } = await client.query<{ present: boolean }>("select to_regclass($1) is not null as present", [
      ledger,
    ]);
    const applied = rows[0]?.present
      ? new Set((await client.query<{ name: string }>(`select name from ${ledger}`)).rows.map((row) => row.name))
      : new Set<string>();
    const pending = options.migrations.map((migration) => migration.name).filter((name) => !applied.has(name));
    const stale = await staleStoredDefinitions(client, options.schema, options.storedDefinitions ?? []);
    if (pending.length > 0 || stale.length > 0)
      throw new ConfigError(
        `schema ${options.schema} is behind this release (migrations not applied: ${pending.join(", ") || "none"}; ` +
          `stored definitions not applied: ${stale.join(", ") || "none"}); with SVC_MIGRATIONS=job the migrate Job ` +
          "(--migrate-only) applies them before the rollout",
      );
  } finally {
    await client.end();
  }
}

/**
 * What `--migrate-only` runs: the migrations and stored definitions of one schema, read from nothing but
 * the database URL (<PREFIX>_DATABASE_URL or SVC_DATABASE_URL), so a migrate Job needs no other secret.
 */
export async function migrateSchema(
  options: Omit<DatabaseOptions, "url" | "migrationMode" | "poolSize"> & { envPrefix: string; env?: NodeJS.ProcessEnv },
): Promise<void> {
  const { databaseUrl } = loadConfig(
    options.envPrefix,
    { databaseUrl: commonSettings.databaseUrl },
    options.env ?? process.env,
    options.logger,
  );
  await migrateDatabase({ ...options, url: databaseUrl });
}

/**
 * A plain driver pool in the service's schema, for the few statements on a hot path where the ORM's
 * per-query work would cost as much as the statement itself: each such statement is one prepared
 * call that decides everything at once.
 */
export function openStatementPool(options: {
  url: string;
  schema: string;
  max: number;
  logger: Logger;
  /** How long a connection may sit idle before it is closed (pg's default, 10 s, if not given; 0 keeps it). */
  idleTimeoutMs?: number;
}): pg.Pool {
  // Generic plans: these statements take arrays whose size a custom plan would see, so PostgreSQL kept
  // judging a fresh plan cheaper and planned them again on every call.
  const pool = new pg.Pool({
    connectionString: options.url,
    max: options.max,
    ...(options.idleTimeoutMs !== undefined && { idleTimeoutMillis: options.idleTimeoutMs }),
    options: `-c search_path=${options.schema} -c plan_cache_mode=force_generic_plan`,
  });
  // An idle connection the server dropped is replaced on next use; without a listener it would crash the process.
  pool.on("error", (error) => options.logger.warn("database connection lost", { error, schema: options.schema }));
  return pool;
}

/** What a hot-path statement runs on: the statement pool, or one of its connections inside a transaction. */
export type Queryable = Pick<pg.ClientBase, "query">;

/** Runs `work` on one connection of `pool` inside a transaction: committed if it returns, rolled back if it throws. */
export async function inTransaction<T>(pool: pg.Pool, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  // A connection that cannot even roll back is closed rather than handed to the next caller.
  let broken: Error | undefined;
  try {
    await client.query("begin");
    const result = await work(client);
    await client.query("commit");
    return result;
  } catch (error) {
    await client.query("rollback").catch((rollbackError: unknown) => {
      broken = rollbackError instanceof Error ? rollbackError : new Error(String(rollbackError));
    });
    throw error;
  } finally {
    client.release(broken);
  }
}

/** Readiness: the database answers a trivial query. */
export async function databaseReachable(orm: MikroORM): Promise<void> {
  await orm.em.fork().execute("select 1");
}
