import type { Queryable, StoredTraceContext } from "@svc/platform";

/** A delivery this process owns until its lease ends, with what it needs to send it. */
export interface ClaimedDelivery {
  deliveryId: string;
  /** The delivery's attempt count including this attempt; the result is written only if it still matches. */
  attempts: number;
  /**
   * Attempts of the current retry schedule including this one (so at least 1). A replay starts a new
   * schedule at 0, so the result is also written only if this still matches: a replay issued while
   * the attempt ran wins over the attempt's result.
   */
  scheduleStep: number;
  /** When the delivery comes due again if no result is written: for another worker, after a crash. */
  leaseUntil: Date;
  messageId: string;
  body: Buffer;
  /** The trace of the event the message came from: the attempt's span continues it. */
  traceContext: StoredTraceContext;
  endpointId: string;
  url: string;
  secretVersion: number;
  secretSealed: Buffer;
  previousSecretSealed: Buffer | null;
  previousSecretExpiresAt: Date | null;
}

/**
 * How a worker takes deliveries: at most `perEndpoint` held per endpoint (in flight or queued
 * behind those), counting what it already `holds`. Each claimed delivery's lease covers the worst
 * case ahead of it: every attempt queued before it on its endpoint using the whole timeout.
 */
export interface ClaimTerms {
  now: Date;
  /** The dispatcher that claims: each claimed delivery names it (`claimed_by`) until its result is written. */
  instanceId: string;
  perEndpoint: number;
  holds: ReadonlyMap<string, number>;
  concurrency: number;
  timeoutMs: number;
  marginMs: number;
}

/**
 * The claim terms are the first seven parameters of every statement that claims ($1 now, $2 per
 * endpoint, $3 holds, $4 concurrency, $5 timeout, $6 margin, $7 the claiming instance); its own
 * parameters follow from $8.
 */
export const termsValues = (terms: ClaimTerms): unknown[] => [
  terms.now,
  terms.perEndpoint,
  JSON.stringify(Object.fromEntries(terms.holds)),
  terms.concurrency,
  terms.timeoutMs,
  terms.marginMs,
  terms.instanceId,
];

/** SQL: the lease end of a delivery with `ahead` deliveries of its endpoint before it in the worker's hands. */
export const leaseEndSql = `($1::timestamptz + ((ahead / $4::int) + 1) * $5::int * interval '1 millisecond' + $6::int * interval '1 millisecond')`;

/** SQL: how many deliveries of endpoint `e` the worker holds already. */
export const heldSql = `coalesce(($3::jsonb ->> e.id)::int, 0)`;

export type ClaimedRow = {
  id: string;
  attempts: number;
  schedule_step: number;
  lease_until: Date;
  message_id: string;
  body: Buffer;
  trace_context: StoredTraceContext;
  endpoint_id: string;
  url: string;
  secret_version: number;
  secret_sealed: Buffer;
  previous_secret_sealed: Buffer | null;
  previous_secret_expires_at: Date | null;
};

export const claimedDelivery = (r: ClaimedRow): ClaimedDelivery => ({
  deliveryId: String(r.id),
  attempts: r.attempts,
  scheduleStep: r.schedule_step,
  leaseUntil: r.lease_until,
  messageId: r.message_id,
  body: r.body,
  traceContext: r.trace_context,
  endpointId: r.endpoint_id,
  url: r.url,
  secretVersion: r.secret_version,
  secretSealed: r.secret_sealed,
  previousSecretSealed: r.previous_secret_sealed,
  previousSecretExpiresAt: r.previous_secret_expires_at,
});

/**
 * Claims due deliveries in one statement: per enabled endpoint up to the worker's room, oldest due
 * first, skipping rows another worker holds, at most `limit` in all. A claim counts as an attempt and
 * moves the next attempt to the lease's end. The schedule lives in Postgres, so a restart loses nothing.
 */
export async function claimDueDeliveries(
  db: Queryable,
  terms: ClaimTerms & { limit: number },
): Promise<ClaimedDelivery[]> {
  const { rows } = await db.query<ClaimedRow>({
    name: "claim_due_deliveries",
    text: `with claimable as (
       select due.id, ${heldSql} + row_number() over (partition by e.id order by due.next_attempt_at, due.id) - 1 as ahead
       from endpoints e
       cross join lateral (
         select d.id, d.next_attempt_at from deliveries d
         where d.endpoint_id = e.id and d.status = 'pending' and d.next_attempt_at <= $1
         order by d.next_attempt_at, d.id
         limit greatest($2::int - ${heldSql}, 0)
         for update of d skip locked
       ) due
       where e.status = 'enabled'
       order by due.next_attempt_at, due.id
       limit $8
     )
     update deliveries d
     set attempts = d.attempts + 1, schedule_step = d.schedule_step + 1, next_attempt_at = ${leaseEndSql}, claimed_by = $7::uuid
     from claimable c, messages m, endpoints e
     where d.id = c.id and m.id = d.message_id and e.id = d.endpoint_id
     returning d.id, d.attempts, d.schedule_step, d.next_attempt_at as lease_until, m.id as message_id, m.body, m.trace_context, e.id as endpoint_id, e.url,
       e.secret_version, e.secret_sealed, e.previous_secret_sealed, e.previous_secret_expires_at`,
    values: [...termsValues(terms), terms.limit],
  });
  return rows.map(claimedDelivery);
}

/**
 * Gives back claimed deliveries whose attempt never started (the worker stops, or their endpoint was
 * disabled): pending and due now, as if they had not been claimed, instead of waiting for the lease.
 * One replayed since its claim is left as the replay made it.
 */
export async function releaseClaims(db: Queryable, deliveries: readonly ClaimedDelivery[], now: Date): Promise<void> {
  await db.query({
    name: "release_claims",
    text: `update deliveries d
     set attempts = d.attempts - 1, schedule_step = d.schedule_step - 1, next_attempt_at = $1, claimed_by = null
     from unnest($2::bigint[], $3::int[], $4::int[]) as c(id, attempts, schedule_step)
     where d.id = c.id and d.attempts = c.attempts and d.schedule_step = c.schedule_step and d.status = 'pending'`,
    values: [
      now,
      deliveries.map((d) => d.deliveryId),
      deliveries.map((d) => d.attempts),
      deliveries.map((d) => d.scheduleStep),
    ],
  });
}

export interface AttemptResult {
  deliveryId: string;
  endpointId: string;
  /** The claim's attempt count and schedule step: the fence of the write (see ClaimedDelivery). */
  attempts: number;
  scheduleStep: number;
  startedAt: Date;
  /** When the attempt ended. */
  at: Date;
  succeeded: boolean;
  statusCode: number | null;
  error: string | null;
  /** What the delivery becomes: delivered, pending again at nextAttemptAt, or failed for good. */
  status: "delivered" | "pending" | "failed";
  nextAttemptAt: Date | null;
}

/**
 * Writes a batch of attempt results in one statement: the deliveries (only where the attempt count
 * and schedule step still match, so a late result never overwrites a newer claim or a replay issued
 * while the attempt ran), each endpoint's failure streak
 * (the first failure since its last success), and the disabling of every endpoint whose streak
 * reached `autoDisableAfterMs` (not an agent's callback endpoint: no operator could enable it again, and each
 * callback has its own schedule). Endpoint rows whose streak did not change are not written.
 * Returns the endpoints it disabled.
 */
export async function recordAttemptResults(
  db: Queryable,
  results: readonly AttemptResult[],
  options: { now: Date; autoDisableAfterMs: number },
): Promise<string[]> {
  const streaks = failureStreaks(results);
  const { rows } = await db.query<{ id: string }>({
    name: "record_attempt_results",
    text: `with written as (
       update deliveries d
       set status = r.status, next_attempt_at = r.next_attempt_at, claimed_by = null, last_attempt_at = r.started_at, last_status_code = r.status_code,
         last_error = r.error, delivered_at = case when r.status = 'delivered' then r.at else d.delivered_at end
       from unnest($1::bigint[], $2::int[], $3::int[], $4::text[], $5::timestamptz[], $6::timestamptz[], $7::int[], $8::text[], $9::timestamptz[])
         as r(id, attempts, schedule_step, status, next_attempt_at, started_at, status_code, error, at)
       where d.id = r.id and d.attempts = r.attempts and d.schedule_step = r.schedule_step
     ), streaks as (
       select id, failing_since, status = 'enabled' and agent_id is null and failing_since <= $13 as disable
       from (
         select s.id, e.status, e.agent_id, case when s.succeeded then s.failing_since else coalesce(e.failing_since, s.failing_since) end as failing_since
         from unnest($10::text[], $11::boolean[], $12::timestamptz[]) as s(id, succeeded, failing_since)
         join endpoints e on e.id = s.id
       ) updated
     ), changed as (
       update endpoints e
       set failing_since = s.failing_since,
         status = case when s.disable then 'disabled' else e.status end,
         disabled_at = case when s.disable then $14::timestamptz else e.disabled_at end,
         disabled_reason = case when s.disable
           then format('disabled automatically: every delivery attempt since %s failed', to_char(s.failing_since at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'))
           else e.disabled_reason end
       from streaks s
       where e.id = s.id and (e.failing_since is distinct from s.failing_since or s.disable)
       returning e.id, s.disable
     )
     select id from changed where disable`,
    values: [
      results.map((r) => r.deliveryId),
      results.map((r) => r.attempts),
      results.map((r) => r.scheduleStep),
      results.map((r) => r.status),
      results.map((r) => r.nextAttemptAt),
      results.map((r) => r.startedAt),
      results.map((r) => r.statusCode),
      results.map((r) => r.error),
      results.map((r) => r.at),
      streaks.map((s) => s.id),
      streaks.map((s) => s.succeeded),
      streaks.map((s) => s.failing_since),
      new Date(options.now.getTime() - options.autoDisableAfterMs),
      options.now,
    ],
  });
  return rows.map((r) => r.id);
}

/**
 * Per endpoint, in the order the attempts ended: whether any succeeded, and the first failure after
 * the last success (null when the last attempt succeeded).
 */
function failureStreaks(
  results: readonly AttemptResult[],
): { id: string; succeeded: boolean; failing_since: Date | null }[] {
  const streaks = new Map<string, { id: string; succeeded: boolean; failing_since: Date | null }>();
  for (const r of [...results].sort((a, b) => a.at.getTime() - b.at.getTime())) {
    const streak = streaks.get(r.endpointId) ?? { id: r.endpointId, succeeded: false, failing_since: null };
    if (r.succeeded) {
      streak.succeeded = true;
      streak.failing_since = null;
    } else {
      streak.failing_since ??= r.at;
    }
    streaks.set(r.endpointId, streak);
  }
  return [...streaks.values()];
}
