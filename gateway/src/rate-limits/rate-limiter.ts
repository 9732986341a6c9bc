import type { AttestationLedgerCheck } from "@svc/contracts/attestation";
import { NaturalBatcher, sqlDefinition, uuid } from "@svc/platform";
import type pg from "pg";
import { type CountRow, countStatement, keyedCountStatement, overflowedCode } from "./count-statement.ts";
import type { BucketName, RatePlan } from "./rate-tiers.ts";
import { firstChecks, ledgerArrays, ledgerRetentionMarginMs, recordChecksStatement } from "./token-checks.ts";

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

/** A request's rate decision (none without a plan) and, for its token check, whether it was the first (none when refused). */
export interface JoinedDecision {
  decision: RateDecision | undefined;
  first: boolean | undefined;
}

interface DecisionRow {
  counts_before: number[];
  limits: number[];
  allowed: boolean[] | null;
  leases_before: number[] | null;
  lease_limits: number[] | null;
  first_checks: Buffer[];
}

interface Asked {
  plan: RatePlan | undefined;
  now: Date;
  leaseId: string | undefined;
  check: AttestationLedgerCheck | undefined;
}

/** A batch's outcome: which requests were allowed (null: all of them), and the hashes of checks that were first. */
interface Decided {
  allowed: boolean[] | null;
  inserted: Buffer[];
}

type LedgerArrays = ReturnType<typeof ledgerArrays>;

/** A request of a batch with the counters it counts in and its lease subject, if it asks for a lease. */
interface Planned {
  asked: Asked;
  own: Counter[];
  lease: LeaseSubject | undefined;
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

/** The counters as both statements take them ($1-$6): subjects, buckets, window starts and ends, demands, limits. */
const counterArrays = (ordered: Counter[]) => [
  ordered.map((c) => c.subject),
  ordered.map((c) => c.bucket),
  ordered.map((c) => c.start),
  ordered.map((c) => c.end),
  ordered.map((c) => c.demand),
  ordered.map((c) => c.limit),
];

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

/**
 * The statement that decides a batch and records the token checks of its allowed requests in the ledger
 * (token-checks.ts); prepared once per connection under this name. Check c belongs to request
 * `$19[c]` (from 1). The ledger's rows are locked after every counter, in hash order, so concurrent
 * statements cannot deadlock.
 */
const decideStatement = {
  name: "decide_rate_limits_and_record_checks",
  text: `with decided as materialized (
           select counts_before, limits, allowed, leases_before, lease_limits
             from decide_rate_limits($1::text[], $2::text[], $3::bigint[], $4::bigint[], $5::integer[], $6::integer[], $7::uuid[], $8::integer[],
                                     $9::integer[], $10::text[], $11::integer[], $12::uuid[], $13::integer[], $14::uuid[], $15::bigint, $16::bigint)
         ), recorded as (
           insert into token_checks (payload_hash, checked_at, expires_at)
             select c.hash, to_timestamp($16::bigint / 1000.0), to_timestamp(c.expires_at / 1000.0)
               from unnest($17::bytea[], $18::bigint[], $19::integer[]) as c(hash, expires_at, request), decided d
              where d.allowed is null or d.allowed[c.request]
              order by c.hash
             on conflict do nothing
             returning payload_hash
         )
         select d.*, array(select payload_hash from recorded) as first_checks from decided d`,
};

/** Requests decided by one statement at most; larger bursts wait for the next one. */
const maxBatch = 64;

/**
 * Full counters remembered at most: past it they are forgotten at once, and a batch counting in one
 * pays a count statement that rolls back before it is decided in order.
 */
const maxKnownFull = 10_000;

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
 * A request may bring a token check (verify-token's): the same statement records it in the ledger of
 * first checks when the request is allowed, and answers whether it was the token's first check
 * (token-checks.ts), so a verify-token costs one statement and no RPC.
 *
 * It talks to PostgreSQL through a small pool of its own (search_path: the gateway schema) rather than
 * the ORM: the decision is one prepared statement on every request's path, and the ORM's per-query
 * work would cost as much as the decision itself.
 */
export class RateLimiter {
  readonly #pool: Pick<pg.Pool, "query">;
  readonly #leaseTtlMs: number;
  readonly #decisions: NaturalBatcher<Asked, JoinedDecision>;
  readonly #releases: NaturalBatcher<string, void>;
  /** Counter key to the end (ms) of the window in which this replica saw it full. */
  readonly #fullUntil = new Map<string, number>();

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

  async take(plan: RatePlan, now: Date): Promise<RateDecision> {
    const { decision } = await this.decide(plan, now, undefined);
    if (!decision) throw new Error("a request with a plan was not decided");
    return decision;
  }

  /** Decides `plan` (when there is one) and records `check` (when there is one) if the request is allowed. */
  decide(plan: RatePlan | undefined, now: Date, check: AttestationLedgerCheck | undefined): Promise<JoinedDecision> {
    const leaseId = plan?.tier.inFlight === undefined ? undefined : uuid();
    return this.#decisions.submit({ plan, now, leaseId, check });
  }

  async #decide(batch: Asked[]): Promise<JoinedDecision[]> {
    // One instant for the batch: the latest of its requests', so no request is counted in a window
    // that another of the same statement has already left.
    const now = Math.max(...batch.map((w) => w.now.getTime()));
    const counters = new Map<string, Counter>();
    const leaseSubjects = new Map<string, LeaseSubject>();
    const planned = batch.map((asked): Planned => {
      const { plan } = asked;
      if (!plan) return { asked, own: [], lease: undefined };
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
    const checks = ledgerArrays(batch.map((asked) => asked.check));
    if (ordered.length === 0 && leases.length === 0) {
      // No request of the batch is counted (anonymous requests uncounted): the ledger alone.
      const { rows } = await this.#pool.query<{ payload_hash: Buffer }>({
        ...recordChecksStatement,
        values: [checks.hashes, checks.expiries, now],
      });
      const firsts = firstChecks(
        batch.map((asked) => asked.check),
        rows.map((row) => row.payload_hash),
        () => true,
      );
      return firsts.map((first) => ({ decision: undefined, first }));
    }
    const { allowed, inserted } =
      (leases.length === 0 && !this.#knownFull(ordered, now) && (await this.#count(ordered, now, checks))) ||
      (await this.#decideInOrder(planned, ordered, leases, now, checks));
    const allowedAt = (r: number) => allowed?.[r] ?? true;
    const firsts = firstChecks(
      batch.map((asked) => asked.check),
      inserted,
      allowedAt,
    );
    // Each request's view: the counts after the requests before it in the batch, and after its own
    // where it was allowed.
    const answers = planned.map(({ asked, own, lease }, r): JoinedDecision => {
      const allowed = allowedAt(r);
      if (!asked.plan) return { decision: undefined, first: firsts[r] };
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
      const decision = {
        allowed,
        buckets,
        ...(allowed && asked.leaseId !== undefined && { leaseId: asked.leaseId }),
      };
      return { decision, first: firsts[r] };
    });
    this.#rememberFull(ordered);
    return answers;
  }

  /**
   * The common batch in one plain statement (count-statement.ts): every request allowed, each counter's
   * count before the batch and its limit set. False when a counter would go over its limit: the
   * statement then rolled back, and the batch must be decided in order.
   */
  async #count(ordered: Counter[], now: number, checks: LedgerArrays): Promise<Decided | false> {
    const keyed = ordered.some((c) => c.keyId !== null);
    const values: unknown[] = [...counterArrays(ordered), now, checks.hashes, checks.expiries];
    if (keyed) values.push(ordered.map((c) => c.keyId));
    let answer: CountRow | undefined;
    try {
      ({
        rows: [answer],
      } = await this.#pool.query<CountRow>({ ...(keyed ? keyedCountStatement : countStatement), values }));
    } catch (error) {
      if ((error as { code?: unknown }).code === overflowedCode) return false;
      throw error;
    }
    if (!answer) throw new Error("the count statement answered no row");
    const written = new Map(answer.subjects.map((subject, i) => [`${subject}\u0000${answer.buckets[i]}`, i]));
    for (const counter of ordered) {
      const i = written.get(counter.key);
      if (i === undefined) throw new Error(`the count statement answered no counter ${counter.key}`);
      counter.count = answered(answer.counts, i, "counts") - counter.demand;
      counter.decidedLimit = answered(answer.limits, i, "limits");
    }
    return { allowed: null, inserted: answer.first_checks };
  }

  /** Whether a counter of the batch was found full in its current window: the count statement would only roll back. */
  #knownFull(ordered: Counter[], now: number): boolean {
    return ordered.some((counter) => {
      const until = this.#fullUntil.get(counter.key);
      if (until === undefined) return false;
      if (until > now) return true;
      this.#fullUntil.delete(counter.key);
      return false;
    });
  }

  /**
   * Counters the batch left full (their counts after it, at or over their limits): until their windows
   * end, batches that count in them skip the count statement, which would only roll back.
   */
  #rememberFull(ordered: Counter[]): void {
    if (this.#fullUntil.size >= maxKnownFull) this.#fullUntil.clear();
    for (const counter of ordered)
      if (counter.count >= counter.decidedLimit) this.#fullUntil.set(counter.key, counter.end);
  }

  /** `decide_rate_limits`: the batch walked in order, each request all or nothing, with leases. */
  async #decideInOrder(
    planned: Planned[],
    ordered: Counter[],
    leases: LeaseSubject[],
    now: number,
    checks: LedgerArrays,
  ): Promise<Decided> {
    let end = 0;
    const {
      rows: [answer],
    } = await this.#pool.query<DecisionRow>({
      ...decideStatement,
      values: [
        ...counterArrays(ordered),
        ordered.some((c) => c.keyId !== null) ? ordered.map((c) => c.keyId) : null,
        planned.map(({ own }) => (end += own.length)),
        planned.flatMap(({ own }) => own.map((c) => c.position + 1)),
        leases.map((l) => l.subject),
        leases.map((l) => l.cap),
        leases.map((l) => l.keyId),
        // Per request: its lease subject's place in `leases` (from 1), or 0 when it asks for no lease.
        leases.length > 0 ? planned.map(({ lease }) => lease?.position ?? 0) : null,
        leases.length > 0 ? planned.map(({ asked }) => asked.leaseId ?? null) : null,
        now + this.#leaseTtlMs,
        now,
        checks.hashes,
        checks.expiries,
        checks.requests,
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
    return { allowed: answer.allowed, inserted: answer.first_checks };
  }

  /** Ends an in_flight lease: when the request finished, however it finished. */
  release(leaseId: string): Promise<void> {
    return this.#releases.submit(leaseId);
  }

  /**
   * Deletes counters of windows that have ended, leases that expired and ledger rows of tokens that
   * expired more than `ledgerRetentionMarginMs` ago, `batchSize` rows a statement until a statement
   * finds fewer: each statement reads only due rows, on the `expires_at` indexes (migrations 0008 and
   * 0010), and holds its locks briefly. Any replica may run it at any time: rows another sweep or a
   * take holds are skipped (`skip locked`), and a counter a take moved into a new window since it was
   * picked is no longer at the picked `ctid`, so it stays. Answers the rows deleted.
   */
  async sweep(now: Date, batchSize = sweepBatchSize): Promise<number> {
    let deleted = 0;
    const due: [string, Date][] = [
      ["rate_counters", now],
      ["rate_leases", now],
      ["token_checks", new Date(now.getTime() - ledgerRetentionMarginMs)],
    ];
    for (const [table, before] of due) {
      for (;;) {
        const { rowCount } = await this.#pool.query(
          `delete from ${table} where expires_at < $1 and ctid = any(array(
             select ctid from ${table} where expires_at < $1 limit $2 for update skip locked))`,
          [before, batchSize],
        );
        deleted += rowCount ?? 0;
        if ((rowCount ?? 0) < batchSize) break;
      }
    }
    return deleted;
  }
}
