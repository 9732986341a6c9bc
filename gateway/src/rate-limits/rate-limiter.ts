import { type Logger, NaturalBatcher, sqlDefinition, uuid } from "@svc/platform";
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

interface Counter {
  subject: string;
  bucket: BucketName;
  start: number;
  end: number;
  limit: number;
  keyId: string | null;
  demand: number;
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
    const now = Math.max(...batch.map((w) => w.now.getTime()));
    const counters = new Map<string, Counter>();
    const leaseSubjects = new Map<string, { cap: number; keyId: string | null }>();
    const planned = batch.map(({ plan }) => {
      const own = plan.tier.buckets.map((bucket) => {
        const subject = bucket.perClientIp ? `${plan.subject}|ip:${plan.clientIp}` : plan.subject;
        const name = `${subject}\u0000${bucket.name}`;
        let counter = counters.get(name);
        if (!counter) {
          const window = windowOf(new Date(now), bucket.windowSeconds);
          counter = {
            subject,
            bucket: bucket.name,
            ...window,
            limit: bucket.limit,
            keyId: plan.keyId ?? null,
            demand: 0,
          };
          counters.set(name, counter);
        }
        counter.demand++;
        return name;
      });
      if (plan.tier.inFlight !== undefined)
        leaseSubjects.set(plan.subject, { cap: plan.tier.inFlight, keyId: plan.keyId ?? null });
      return own;
    });
    // Every replica locks counters, and lease subjects, in one order.
    const names = [...counters.keys()].sort();
    const position = new Map(names.map((name, i) => [name, i]));
    const ordered = names.map((name) => counters.get(name)!);
    const leases = [...leaseSubjects.keys()].sort();
    const leasePosition = new Map(leases.map((subject, i) => [subject, i + 1]));
    // Per request: its lease subject's place in `leases` (from 1), or 0 when it asks for no lease.
    const leaseRefs = batch.map(({ plan }) =>
      plan.tier.inFlight === undefined ? 0 : leasePosition.get(plan.subject)!,
    );
    const refs = planned.map((own) => own.map((name) => position.get(name)!));
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
        refs.map((own) => (end += own.length)),
        refs.flat().map((i) => i + 1),
        leases,
        leases.map((subject) => leaseSubjects.get(subject)!.cap),
        leases.map((subject) => leaseSubjects.get(subject)!.keyId),
        leases.length > 0 ? leaseRefs : null,
        leases.length > 0 ? batch.map(({ leaseId }) => leaseId ?? null) : null,
        now + this.#leaseTtlMs,
        now,
      ],
    });
    if (!answer) throw new Error("decide_rate_limits answered no row");
    // Each request's view: the counts after the requests before it in the batch, and after its own
    // where it was allowed.
    const counts = [...answer.counts_before];
    const leased = [...(answer.leases_before ?? [])];
    return batch.map((asked, r) => {
      const allowed = answer.allowed?.[r] ?? true;
      const lease = leaseRefs[r]!;
      if (allowed) {
        for (const i of refs[r]!) counts[i]!++;
        if (lease > 0) leased[lease - 1]!++;
      }
      const buckets = refs[r]!.map((i): BucketState => {
        const counter = ordered[i]!;
        const limit = answer.limits[i]!;
        return {
          name: counter.bucket,
          limit,
          remaining: Math.max(0, limit - counts[i]!),
          resetIn: Math.ceil((counter.end - now) / 1000),
          windowSeconds: (counter.end - counter.start) / 1000,
          full: !allowed && counts[i]! >= limit,
        };
      });
      if (lease > 0) {
        const limit = answer.lease_limits![lease - 1]!;
        const used = leased[lease - 1]!;
        buckets.push({
          name: "in_flight",
          limit,
          remaining: Math.max(0, limit - used),
          resetIn: 1,
          full: !allowed && used >= limit,
        });
      }
      return { allowed, buckets, ...(allowed && asked.leaseId !== undefined && { leaseId: asked.leaseId }) };
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
