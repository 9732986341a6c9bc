import { NaturalBatcher, sqlDefinition, uuid } from "@svc/platform";
import type pg from "pg";
import type { BucketName, RatePlan } from "./rate-tiers.ts";

/** One bucket after a decision, as `_rateLimit.buckets` reports it. */
export interface BucketState {
  name: BucketName;
  limit: number;
  /** Requests left in the window (in_flight: requests that may start now). */
  remaining: number;
  /** Seconds until the window resets (in_flight: 1, a slot frees when any request ends). */
  resetIn: number;
  /** The bucket's window; absent for in_flight. */
  windowSeconds?: number;
  /** This bucket had no room. */
  full: boolean;
}

export interface RateDecision {
  allowed: boolean;
  buckets: BucketState[];
  /** Held while an allowed request with an in_flight bucket runs; give it back with `release`. */
  leaseId?: string;
}

/** The fixed window of `windowSeconds` that holds `now`, aligned to the epoch. */
export function windowOf(now: Date, windowSeconds: number): { start: number; end: number } {
  const length = windowSeconds * 1000;
  const start = Math.floor(now.getTime() / length) * length;
  return { start, end: start + length };
}

interface DecisionRow {
  counts_before: number[];
  limits: number[];
  allowed: boolean[] | null;
  leases_before: number[] | null;
  lease_limits: number[] | null;
}

interface Asked {
  plan: RatePlan;
  now: Date;
  leaseId: string | undefined;
}

/** One counter row a batch takes: a bucket of one subject in one window. */
interface Counter {
  /** `subject\u0000bucket`: the order every replica locks counters in. */
  key: string;
  subject: string;
  bucket: BucketName;
  start: number;
  end: number;
  limit: number;
  keyId: string | null;
  demand: number;
  /** Its place in the statement's arrays, from 0. */
  position: number;
  /** The limit the statement applied (a key's own limit overrides the tier's). */
  decidedLimit: number;
  /** The count as the requests of the batch are replayed in order. */
  count: number;
}

/** One in_flight lease subject a batch takes. */
interface LeaseSubject {
  subject: string;
  cap: number;
  keyId: string | null;
  /** Its place in the statement's arrays, from 1 (0 means no lease). */
  position: number;
  decidedLimit: number;
  count: number;
}

/** The element of a statement's answer array that the statement promised at `index`. */
function answered(values: readonly number[], index: number, column: string): number {
  const value = values[index];
  if (value === undefined) throw new Error(`decide_rate_limits answered no ${column}[${index}]`);
  return value;
}

function byCodeUnits(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** `decide_rate_limits`, the decision itself: applied at start whenever its text changes (the platform's stored definitions). */
export const decideRateLimits = sqlDefinition(new URL("./decide-rate-limits.sql", import.meta.url));

/** The statement that decides a batch; prepared once per connection under this name. */
const decideStatement = {
  name: "decide_rate_limits",
  text: `select counts_before, limits, allowed, leases_before, lease_limits
         from decide_rate_limits($1::text[], $2::text[], $3::bigint[], $4::bigint[], $5::integer[], $6::integer[], $7::uuid[], $8::integer[],
                                 $9::integer[], $10::text[], $11::integer[], $12::uuid[], $13::integer[], $14::uuid[], $15::bigint, $16::bigint)`,
};

/** Requests decided by one statement at most; larger bursts wait for the next one. */
const maxBatch = 64;

/** Rows one sweep statement deletes at most: short enough that it never holds many locks for long. */
const sweepBatchSize = 1000;

/**
 * The rate-limit state in the gateway's schema, shared by every replica. Requests are decided by
 * `decide_rate_limits` (`decide-rate-limits.sql`): one statement, atomic, in order, each request all or nothing,
 * so the limits hold exactly however many replicas count at once. Requests that arrive in the same
 * turn of the event loop, or while a statement is under way, leave together in the next statement
 * ({@link NaturalBatcher}): a quiet gateway waits for no one, and a busy one pays one round trip, and
 * takes each counter's row lock once, per batch instead of per request. An in_flight slot is a lease with an
 * expiry, so a replica that dies mid-request frees its slots after `leaseTtlMs`; ended leases are
 * deleted in batches the same way.
 *
 * It talks to PostgreSQL through a small pool of its own (search_path: the gateway schema) rather than
 * the ORM: the decision is one prepared statement on every request's path, and the ORM's per-query
 * work would cost as much as the decision itself.
 */
export class RateLimiter {
  readonly #pool: Pick<pg.Pool, "query">;
  readonly #leaseTtlMs: number;
  readonly #decisions: NaturalBatcher<Asked, RateDecision>;
  readonly #releases: NaturalBatcher<string, void>;

  constructor(options: { pool: Pick<pg.Pool, "query">; leaseTtlMs: number }) {
    this.#pool = options.pool;
    this.#leaseTtlMs = options.leaseTtlMs;
    this.#decisions = new NaturalBatcher({ maxBatch, gatherTurn: true, run: (batch) => this.#decide(batch) });
    this.#releases = new NaturalBatcher({
      maxBatch,
      gatherTurn: true,
      run: async (leaseIds) => {
        await this.#pool.query(`delete from rate_leases where id = any($1::uuid[])`, [leaseIds]);
        return leaseIds.map(() => undefined);
      },
    });
  }

  take(plan: RatePlan, now: Date): Promise<RateDecision> {
    return this.#decisions.submit({ plan, now, leaseId: plan.tier.inFlight === undefined ? undefined : uuid() });
  }

  async #decide(batch: Asked[]): Promise<RateDecision[]> {
    // One instant for the batch: the latest of its requests', so no request is counted in a window
    // that another of the same statement has already left.
    const now = Math.max(...batch.map((w) => w.now.getTime()));
    const counters = new Map<string, Counter>();
    const leaseSubjects = new Map<string, LeaseSubject>();
    const planned = batch.map((asked) => {
      const { plan } = asked;
      const own = plan.tier.buckets.map((bucket) => {
        const subject = bucket.perClientIp ? `${plan.subject}|ip:${plan.clientIp}` : plan.subject;
        const key = `${subject}\u0000${bucket.name}`;
        let counter = counters.get(key);
        if (!counter) {
          const window = windowOf(new Date(now), bucket.windowSeconds);
          counter = {
            key,
            subject,
            bucket: bucket.name,
            ...window,
            limit: bucket.limit,
            keyId: plan.keyId ?? null,
            demand: 0,
            position: 0,
            decidedLimit: 0,
            count: 0,
          };
          counters.set(key, counter);
        }
        counter.demand++;
        return counter;
      });
      let lease: LeaseSubject | undefined;
      if (plan.tier.inFlight !== undefined) {
        lease = leaseSubjects.get(plan.subject);
        if (!lease) {
          lease = { subject: plan.subject, cap: 0, keyId: null, position: 0, decidedLimit: 0, count: 0 };
          leaseSubjects.set(plan.subject, lease);
        }
        lease.cap = plan.tier.inFlight;
        lease.keyId = plan.keyId ?? null;
      }
      return { asked, own, lease };
    });
    // Every replica locks counters, and lease subjects, in one order.
    const ordered = [...counters.values()].sort((a, b) => byCodeUnits(a.key, b.key));
    ordered.forEach((counter, i) => {
      counter.position = i;
    });
    const leases = [...leaseSubjects.values()].sort((a, b) => byCodeUnits(a.subject, b.subject));
    leases.forEach((lease, i) => {
      lease.position = i + 1;
    });
    let end = 0;
    const {
      rows: [answer],
    } = await this.#pool.query<DecisionRow>({
      ...decideStatement,
      values: [
        ordered.map((c) => c.subject),
        ordered.map((c) => c.bucket),
        ordered.map((c) => c.start),
        ordered.map((c) => c.end),
        ordered.map((c) => c.demand),
        ordered.map((c) => c.limit),
        ordered.some((c) => c.keyId !== null) ? ordered.map((c) => c.keyId) : null,
        planned.map(({ own }) => (end += own.length)),
        planned.flatMap(({ own }) => own.map((c) => c.position + 1)),
        leases.map((l) => l.subject),
        leases.map((l) => l.cap),
        leases.map((l) => l.keyId),
        // Per request: its lease subject's place in `leases` (from 1), or 0 when it asks for no lease.
        leases.length > 0 ? planned.map(({ lease }) => lease?.position ?? 0) : null,
        leases.length > 0 ? batch.map(({ leaseId }) => leaseId ?? null) : null,
        now + this.#leaseTtlMs,
        now,
      ],
    });
    if (!answer) throw new Error("decide_rate_limits answered no row");
    for (const counter of ordered) {
      counter.count = answered(answer.counts_before, counter.position, "counts_before");
      counter.decidedLimit = answered(answer.limits, counter.position, "limits");
    }
    for (const lease of leases) {
      if (!answer.leases_before || !answer.lease_limits) throw new Error("decide_rate_limits answered no leases");
      lease.count = answered(answer.leases_before, lease.position - 1, "leases_before");
      lease.decidedLimit = answered(answer.lease_limits, lease.position - 1, "lease_limits");
    }
    // Each request's view: the counts after the requests before it in the batch, and after its own
    // where it was allowed.
    return planned.map(({ asked, own, lease }, r) => {
      const allowed = answer.allowed?.[r] ?? true;
      if (allowed) {
        for (const counter of own) counter.count++;
        if (lease) lease.count++;
      }
      const buckets = own.map(
        (counter): BucketState => ({
          name: counter.bucket,
          limit: counter.decidedLimit,
          remaining: Math.max(0, counter.decidedLimit - counter.count),
          resetIn: Math.ceil((counter.end - now) / 1000),
          windowSeconds: (counter.end - counter.start) / 1000,
          full: !allowed && counter.count >= counter.decidedLimit,
        }),
      );
      if (lease) {
        buckets.push({
          name: "in_flight",
          limit: lease.decidedLimit,
          remaining: Math.max(0, lease.decidedLimit - lease.count),
          resetIn: 1,
          full: !allowed && lease.count >= lease.decidedLimit,
        });
      }
      return { allowed, buckets, ...(allowed && asked.leaseId !== undefined && { leaseId: asked.leaseId }) };
    });
  }

  /** Ends an in_flight lease: when the request finished, however it finished. */
  release(leaseId: string): Promise<void> {
    return this.#releases.submit(leaseId);
  }

  /**
   * Deletes counters of windows that have ended and leases that expired, `batchSize` rows a statement
   * until a statement finds fewer: each statement reads only due rows, on the `expires_at` indexes
   * (migration 0007), and holds its locks briefly. Any replica may run it at any time: rows another
   * sweep or a take holds are skipped (`skip locked`), and a counter a take moved into a new window
   * since it was picked is no longer at the picked `ctid`, so it stays. Answers the rows deleted.
   */
  async sweep(now: Date, batchSize = sweepBatchSize): Promise<number> {
    let deleted = 0;
    for (const table of ["rate_counters", "rate_leases"]) {
      for (;;) {
        const { rowCount } = await this.#pool.query(
          `delete from ${table} where expires_at < $1 and ctid = any(array(
             select ctid from ${table} where expires_at < $1 limit $2 for update skip locked))`,
          [now, batchSize],
        );
        deleted += rowCount ?? 0;
        if ((rowCount ?? 0) < batchSize) break;
      }
    }
    return deleted;
  }
}
