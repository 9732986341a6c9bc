import type pg from "pg";
import { NaturalBatcher, uuid, type Logger } from "@svc/platform";
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
  out_request: number;
  out_bucket: BucketName;
  out_limit: number;
  out_used: number;
  out_allowed: boolean;
}

interface Asked {
  plan: RatePlan;
  now: Date;
  leaseId: string | undefined;
}

/** The statement that decides a batch; prepared once per connection under this name. */
const takeStatement = {
  name: "take_rate_limits",
  text: `select out_request, out_bucket, out_limit, out_used, out_allowed
         from take_rate_limits($1::text[], $2::text[], $3::bigint[], $4::timestamptz[], $5::integer[], $6::text[], $7::uuid[],
                               $8::integer[], $9::integer[], $10::integer[], $11::integer[], $12::integer[], $13::uuid[], $14::timestamptz, $15::timestamptz)`,
};

/** Requests decided by one statement at most; larger bursts wait for the next one. */
const maxBatch = 64;

/**
 * The rate-limit state in the gateway's schema, shared by every replica. Requests are decided by
 * `take_rate_limits` (migration 0002): one statement, atomic, in order, each request all or nothing,
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
  readonly #logger: Logger;
  readonly #decisions: NaturalBatcher<Asked, RateDecision>;
  readonly #releases: NaturalBatcher<string, void>;

  constructor(options: { pool: Pick<pg.Pool, "query">; leaseTtlMs: number; logger: Logger }) {
    this.#pool = options.pool;
    this.#leaseTtlMs = options.leaseTtlMs;
    this.#logger = options.logger;
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
    const now = new Date(Math.max(...batch.map((w) => w.now.getTime())));
    const counters = new Map<string, { subject: string; bucket: string; start: number; end: number; demand: number }>();
    const leaseSubjects = new Set<string>();
    const planned = batch.map(({ plan }) => {
      const own = plan.tier.buckets.map((bucket) => {
        const subject = bucket.perClientIp ? `${plan.subject}|ip:${plan.clientIp}` : plan.subject;
        const name = `${subject}\u0000${bucket.name}`;
        const counter = counters.get(name) ?? { subject, bucket: bucket.name, ...windowOf(now, bucket.windowSeconds), demand: 0 };
        counter.demand++;
        counters.set(name, counter);
        return { name, limit: bucket.limit };
      });
      if (plan.tier.inFlight !== undefined) leaseSubjects.add(plan.subject);
      return own;
    });
    // Every replica locks counters in this one order.
    const names = [...counters.keys()].sort();
    const position = new Map(names.map((name, i) => [name, i + 1]));
    const ordered = names.map((name) => counters.get(name)!);
    const leases = [...leaseSubjects].sort();
    const refs = planned.flat();
    let end = 0;
    const { rows } = await this.#pool.query<DecisionRow>({
      ...takeStatement,
      values: [
        ordered.map((c) => c.subject),
        ordered.map((c) => c.bucket),
        ordered.map((c) => c.start),
        ordered.map((c) => new Date(c.end)),
        ordered.map((c) => c.demand),
        leases,
        batch.map(({ plan }) => plan.keyId ?? null),
        planned.map((own) => (end += own.length)),
        refs.map(({ name }) => position.get(name)!),
        refs.map(({ limit }) => limit),
        batch.map(({ plan }) => (plan.tier.inFlight === undefined ? 0 : leases.indexOf(plan.subject) + 1)),
        batch.map(({ plan }) => plan.tier.inFlight ?? 0),
        batch.map(({ leaseId }) => leaseId ?? null),
        new Date(now.getTime() + this.#leaseTtlMs),
        now,
      ],
    });
    return batch.map((waiting, i) => {
      const own = rows.filter((row) => row.out_request === i);
      const allowed = own[0]?.out_allowed === true;
      const buckets = own.map((row): BucketState => {
        const window = waiting.plan.tier.buckets.find((b) => b.name === row.out_bucket);
        return {
          name: row.out_bucket,
          limit: row.out_limit,
          remaining: Math.max(0, row.out_limit - row.out_used),
          resetIn: window ? Math.ceil((windowOf(now, window.windowSeconds).end - now.getTime()) / 1000) : 1,
          ...(window && { windowSeconds: window.windowSeconds }),
          full: !allowed && row.out_used >= row.out_limit,
        };
      });
      return { allowed, buckets, ...(allowed && waiting.leaseId !== undefined && { leaseId: waiting.leaseId }) };
    });
  }

  /** Ends an in_flight lease: when the request finished, however it finished. */
  release(leaseId: string): Promise<void> {
    return this.#releases.submit(leaseId);
  }

  /** Deletes counters of windows that have ended and leases that expired; any replica may run it. */
  async sweep(now: Date): Promise<void> {
    await this.#pool.query(`delete from rate_counters where expires_at < $1`, [now]);
    await this.#pool.query(`delete from rate_leases where expires_at < $1`, [now]);
  }

  /** Sweeps every `everyMs` until stopped; a failed sweep is logged and tried again next time. */
  startSweeping(now: () => Date, everyMs: number): () => void {
    const timer = setInterval(() => {
      this.sweep(now()).catch((error: unknown) => this.#logger.warn("rate-limit sweep failed", { error }));
    }, everyMs);
    timer.unref();
    return () => clearInterval(timer);
  }
}
