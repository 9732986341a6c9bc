import { randomInt } from "node:crypto";
import { type Clock, type Logger, type Queryable, startPeriodicJob } from "@svc/platform";
import pg from "pg";

/**
 * Which dispatcher holds a claim, and how a dispatcher that is gone gives its claims back at once.
 *
 * Each process has a row (`dispatcher_instances`) with a heartbeat renewed on the clock, and holds a
 * session advisory lock on its own connection for as long as it lives. Another dispatcher counts it
 * gone when either fails: the lock is free (the process died, even by `kill -9`: its connection
 * closed and PostgreSQL dropped the lock at once), or the heartbeat is older than `staleAfterMs` (a
 * process that hangs, or a host cut off with its connection still open). A dispatcher looks when it
 * starts and on every heartbeat; a gone one's pending claims come due now, in bounded batches, under
 * the same message ids, so receivers deduplicate by `webhook-id` as before. Leases stay the last resort.
 */

/** The advisory lock's first key: the namespace of dispatcher liveness locks (the second is the instance's). */
const lockNamespace = 0x77_68_64_69; // "whdi"

/** Deliveries released by one statement; a larger backlog takes several, each on the index. */
const releaseBatch = 500;

/** Marks this instance alive (inserts its row on the first beat). */
export async function recordHeartbeat(
  db: Queryable,
  instance: { id: string; lockKey: number },
  now: Date,
): Promise<void> {
  await db.query({
    name: "dispatcher_heartbeat",
    text: `insert into dispatcher_instances (id, lock_key, started_at, heartbeat_at) values ($1, $2, $3, $3)
       on conflict (id) do update set heartbeat_at = excluded.heartbeat_at`,
    values: [instance.id, instance.lockKey, now],
  });
}

/** The other instances that are gone: their lock is free or their heartbeat stale. */
export async function goneInstances(
  db: Queryable,
  options: { self: string; now: Date; staleAfterMs: number },
): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>({
    name: "gone_dispatchers",
    text: `select i.id from dispatcher_instances i
       where i.id <> $1 and (i.heartbeat_at < $2 or not exists (
         select 1 from pg_locks l
         where l.locktype = 'advisory' and l.granted and l.database = (select oid from pg_database where datname = current_database())
           and l.classid = $3::int::oid and l.objid = i.lock_key::oid and l.objsubid = 2))`,
    values: [options.self, new Date(options.now.getTime() - options.staleAfterMs), lockNamespace],
  });
  return rows.map((r) => r.id);
}

/**
 * Gives back at most `limit` pending claims of the given instances: due now, holder cleared. The
 * attempt count stays (the attempt may have been made), so a late result of an instance that was only
 * slow is written while nobody else has claimed the delivery, and fenced off once another has.
 */
async function releaseClaimsOf(db: Queryable, instances: readonly string[], now: Date, limit: number) {
  const { rowCount } = await db.query({
    name: "release_claims_of",
    text: `update deliveries d set next_attempt_at = $2, claimed_by = null
       where d.id in (
         select id from deliveries where claimed_by = any($1::uuid[]) and status = 'pending'
         order by claimed_by, id limit $3 for update skip locked)`,
    values: [instances, now, limit],
  });
  return rowCount ?? 0;
}

/** Forgets gone instances that hold no pending claim any more. */
async function forgetInstances(db: Queryable, instances: readonly string[]): Promise<void> {
  await db.query({
    name: "forget_dispatchers",
    text: `delete from dispatcher_instances i where i.id = any($1::uuid[])
       and not exists (select 1 from deliveries d where d.claimed_by = i.id and d.status = 'pending')`,
    values: [instances],
  });
}

/** Releases every pending claim of every gone instance, a batch per statement; returns how many. */
export async function releaseGoneInstances(
  db: Queryable,
  options: { self: string; now: Date; staleAfterMs: number; batch: number },
): Promise<number> {
  const gone = await goneInstances(db, options);
  if (gone.length === 0) return 0;
  let released = 0;
  for (;;) {
    const count = await releaseClaimsOf(db, gone, options.now, options.batch);
    released += count;
    if (count < options.batch) break;
  }
  await forgetInstances(db, gone);
  return released;
}

export interface InstanceHeartbeat {
  readonly id: string;
  /** Stops beating, drops the row unless it still holds claims, and the liveness lock (after the worker has stopped). */
  stop(): Promise<void>;
}

/**
 * Starts this process's liveness: takes the lock, writes the row, releases the claims of instances
 * already gone (before the worker claims anything), then beats every `everyMs` of real time, with
 * timestamps from `clock`. `onReleased` wakes the worker when claims came back.
 */
export async function startInstanceHeartbeat(options: {
  id: string;
  databaseUrl: string;
  statements: Queryable;
  clock: Clock;
  logger: Logger;
  everyMs: number;
  staleAfterMs: number;
  onReleased: () => void;
}): Promise<InstanceHeartbeat> {
  const { statements, clock, logger } = options;
  const instance = { id: options.id, lockKey: randomInt(2 ** 31) };
  let lock: pg.Client | undefined;

  /** The lock lives as long as its connection; a lost connection is opened and locked again on the next beat. */
  const holdLock = async () => {
    if (lock) return;
    const client = new pg.Client({
      connectionString: options.databaseUrl,
      application_name: "webhook-dispatch liveness",
    });
    client.on("error", (error) => {
      logger.warn("lost the dispatcher's liveness connection; others may take over its claims", { error });
      if (lock === client) lock = undefined;
    });
    await client.connect();
    await client.query("select pg_advisory_lock($1, $2)", [lockNamespace, instance.lockKey]);
    lock = client;
  };

  const beat = async () => {
    await holdLock();
    const now = clock.now();
    await recordHeartbeat(statements, instance, now);
    const released = await releaseGoneInstances(statements, {
      self: instance.id,
      now,
      staleAfterMs: options.staleAfterMs,
      batch: releaseBatch,
    });
    if (released > 0) {
      logger.info("released the claims of dispatchers that are gone", { deliveries: released });
      options.onReleased();
    }
  };

  await beat();
  const beating = startPeriodicJob({
    everyMs: options.everyMs,
    logger,
    steps: [{ name: "dispatcher heartbeat", run: beat }],
  });

  return {
    id: instance.id,
    async stop() {
      await beating.stop();
      // A claim still held (a result that could not be written) keeps the row: with the lock dropped,
      // the next dispatcher to look finds this one gone and gives the claim back.
      await forgetInstances(statements, [instance.id]).catch((error: unknown) =>
        logger.warn("could not remove the dispatcher's row", { error }),
      );
      await lock?.end().catch(() => undefined);
      lock = undefined;
    },
  };
}
