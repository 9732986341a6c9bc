/**
 * The statement for the common batch, in which every request has room and none asks for an in_flight
 * lease: one plain upsert of the counters and the ledger's insert, without `decide_rate_limits`. On this
 * machine the function's call, its join back to the asked counters and the read of `key_rate_limits` cost
 * PostgreSQL about 250 µs a statement over this one's 70 (gateway/README.md, "Performance").
 *
 * The upsert writes what the whole batch asks of each counter and the limit it judged it by (the tier's,
 * or for a keyed batch its key's raised one), and returns both. When a counter went over its limit,
 * `rate_counters_overflowed()` (decide-rate-limits.sql) raises {@link overflowedCode}: the statement,
 * the counts and the ledger rows roll back together and the caller decides the batch again with
 * `decide_rate_limits`, which walks the requests in order. Counters and ledger rows are locked in the
 * same orders as there (counters as given, then hashes), so the two statements cannot deadlock.
 *
 * Parameters: the counters' subjects, buckets, window starts and ends (ms), demands and tier limits
 * ($1-$6), the batch's instant ($7), the checks' payload hashes and token expiries ($8, $9), and in the
 * keyed form each counter's key id ($10). The answer is one row: each counter's subject, bucket, count
 * after the batch and limit, and the hashes of the checks that were first.
 */
const countText = (keyed: boolean) => `
  with written as (
    insert into rate_counters as c (subject, bucket, window_start, count, expires_at, "limit")
      select t.s, t.b, t.w, t.d, to_timestamp(t.e / 1000.0),
             ${keyed ? `coalesce((select o."limit" from key_rate_limits o where o.key_id = t.k and o.bucket = t.b), t.l)` : "t.l"}
        from unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[], $5::integer[], $6::integer[]${keyed ? ", $10::uuid[]" : ""})
             with ordinality as t(s, b, w, e, d, l${keyed ? ", k" : ""}, i)
       order by t.i
    on conflict on constraint rate_counters_pkey do update
      set count = case when c.window_start < excluded.window_start then 0 else c.count end + excluded.count,
          window_start = greatest(c.window_start, excluded.window_start),
          expires_at = greatest(c.expires_at, excluded.expires_at),
          "limit" = excluded."limit"
    returning c.subject, c.bucket, c.count, c."limit"
  ), judged as (
    select array_agg(subject) as subjects, array_agg(bucket) as buckets, array_agg(count) as counts,
           array_agg("limit") as limits, bool_and(count <= "limit") as fits
      from written
  ), recorded as (
    insert into token_checks (payload_hash, checked_at, expires_at)
      select c.hash, to_timestamp($7::bigint / 1000.0), to_timestamp(c.expires_at / 1000.0)
        from unnest($8::bytea[], $9::bigint[]) as c(hash, expires_at), judged j
       where j.fits
       order by c.hash
      on conflict do nothing
      returning payload_hash
  )
  select j.subjects, j.buckets, j.counts, j.limits,
         case when j.fits then array(select payload_hash from recorded) else rate_counters_overflowed() end as first_checks
    from judged j`;

/** For batches whose counters belong to no key: `key_rate_limits` is not read. */
export const countStatement = { name: "count_rate_limits_and_record_checks", text: countText(false) };

/** For batches with a key's counters, whose raised limits apply. */
export const keyedCountStatement = { name: "count_keyed_rate_limits_and_record_checks", text: countText(true) };

/** The SQLSTATE of `rate_counters_overflowed()`. */
export const overflowedCode = "SVRL1";

export interface CountRow {
  subjects: string[];
  buckets: string[];
  counts: number[];
  limits: number[];
  first_checks: Buffer[];
}
