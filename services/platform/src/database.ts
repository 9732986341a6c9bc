import type { EntitySchema, MigrationObject } from "@mikro-orm/core";
import { Migration, Migrator } from "@mikro-orm/migrations";
import { MikroORM, type Options } from "@mikro-orm/postgresql";
import pg from "pg";
import type { Logger } from "./logger.ts";
import { applyStoredDefinitions, type StoredDefinition } from "./stored-definitions.ts";

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
}

/**
 * One ORM per service, bound to the service's schema, with its migrations and then its stored
 * definitions applied before it serves. An advisory lock keeps replicas that start together from
 * migrating at the same time.
 */
export async function openDatabase(options: DatabaseOptions): Promise<MikroORM> {
  await migrateUnderLock(options);
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

async function migrateUnderLock(options: DatabaseOptions): Promise<void> {
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

/**
 * A plain driver pool in the service's schema, for the few statements on a hot path where the ORM's
 * per-query work would cost as much as the statement itself: each such statement is one prepared
 * call that decides everything at once.
 */
export function openStatementPool(options: { url: string; schema: string; max: number; logger: Logger }): pg.Pool {
  // Generic plans: these statements take arrays whose size a custom plan would see, so PostgreSQL kept
  // judging a fresh plan cheaper and planned them again on every call.
  const pool = new pg.Pool({
    connectionString: options.url,
    max: options.max,
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
