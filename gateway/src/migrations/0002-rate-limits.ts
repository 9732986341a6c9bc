import { Migration } from "@svc/platform";

/**
 * Rate-limit state shared by every gateway replica. One counter row per (subject, bucket) holds the
 * current fixed window; `take_rate_limit` decides a whole request in one statement (see rate-limiter.ts).
 */
export class CreateRateLimitTables extends Migration {
  override up(): void {
    // No secondary index, and room on each page, so that an increment is a HOT update.
    this.addSql(`create table "rate_counters" (
      "subject" text not null,
      "bucket" text not null,
      "window_start" bigint not null,
      "count" integer not null,
      "expires_at" timestamptz not null,
      primary key ("subject", "bucket")) with (fillfactor = 70)`);
    this.addSql(`create table "rate_leases" (
      "id" uuid primary key,
      "subject" text not null,
      "expires_at" timestamptz not null)`);
    this.addSql(`create index "rate_leases_by_subject" on "rate_leases" ("subject", "expires_at")`);
    this.addSql(`create table "key_rate_limits" (
      "key_id" uuid not null references "api_keys" ("id") on delete cascade,
      "bucket" text not null,
      "limit" integer not null check ("limit" > 0),
      "updated_at" timestamptz not null,
      primary key ("key_id", "bucket"))`);
    this.addSql(takeRateLimitFunction);
  }
}

/**
 * Decides a batch of requests in one statement, in order, each all or nothing.
 *
 * The counters the batch touches come as arrays, distinct and in one fixed order, so that concurrent
 * batches lock them in the same order and never deadlock. One upsert locks them all (creating a
 * counter, or starting its new window, as needed) and adds what the whole batch asks of each
 * (`p_demands`), which is the outcome whenever every request has room. Then the requests are walked in
 * order from the counts before the batch: a request that finds room in every one of its buckets is
 * counted in all of them (and takes its in_flight lease), one that does not is counted in none. Where
 * that ends below what the upsert wrote, the count is set back before the statement ends; the row
 * locks are held throughout, so no other transaction ever sees the optimistic count.
 *
 * The requests come as parallel arrays (plpgsql reads array elements without a query): request r
 * counts in the counters `p_counter_refs[p_request_ends[r - 1] + 1 .. p_request_ends[r]]` with the
 * default limits at the same places of `p_counter_limits`, has the key `p_request_keys[r]` (or null)
 * and, where `p_request_leases[r]` is not 0, asks for an in_flight lease of that lease subject with
 * the default cap `p_lease_limits[r]` and the id `p_lease_ids[r]`. A key's raised limit
 * (key_rate_limits) replaces its tier's.
 */
const takeRateLimitFunction = `
create function "take_rate_limits"(
  p_subjects text[],
  p_buckets text[],
  p_window_starts bigint[],
  p_window_ends timestamptz[],
  p_demands integer[],
  p_lease_subjects text[],
  p_request_keys uuid[],
  p_request_ends integer[],
  p_counter_refs integer[],
  p_counter_limits integer[],
  p_request_leases integer[],
  p_lease_limits integer[],
  p_lease_ids uuid[],
  p_lease_expires timestamptz,
  p_now timestamptz
) returns table (out_request integer, out_bucket text, out_limit integer, out_used integer, out_allowed boolean)
language plpgsql as $fn$
declare
  v_names text[];
  v_written integer[];
  v_counts integer[];
  v_leases integer[] := '{}';
  v_raised jsonb := '{}';
  v_any_raised boolean := false;
  v_taken_ids uuid[] := '{}';
  v_taken_subjects text[] := '{}';
  v_row record;
  v_r integer;
  v_k integer;
  v_i integer;
  v_start integer := 1;
  v_lease integer;
  v_lease_limit integer;
  v_room boolean;
begin
  v_names := array(select s || ' ' || b from unnest(p_subjects, p_buckets) as t(s, b));
  v_written := array_fill(0, array[cardinality(p_subjects)]);
  for v_row in
    insert into rate_counters as c (subject, bucket, window_start, count, expires_at)
      select t.s, t.b, t.w, t.d, t.e from unnest(p_subjects, p_buckets, p_window_starts, p_window_ends, p_demands) with ordinality as t(s, b, w, e, d, i) order by t.i
      on conflict on constraint rate_counters_pkey do update
        set count = case when c.window_start < excluded.window_start then 0 else c.count end + excluded.count,
            window_start = greatest(c.window_start, excluded.window_start),
            expires_at = greatest(c.expires_at, excluded.expires_at)
      returning array_position(v_names, c.subject || ' ' || c.bucket) as i, c.count
  loop
    v_written[v_row.i] := v_row.count;
  end loop;
  v_counts := array(select w - d from unnest(v_written, p_demands) as t(w, d));

  if exists (select 1 from unnest(p_request_keys) as k(id) where k.id is not null) then
    select coalesce(jsonb_object_agg(o.key_id::text || ' ' || o.bucket, o."limit"), '{}') into v_raised
      from key_rate_limits o where o.key_id = any(p_request_keys);
    v_any_raised := v_raised <> '{}';
  end if;

  for v_i in 1 .. coalesce(cardinality(p_lease_subjects), 0) loop
    perform pg_advisory_xact_lock(hashtextextended('rate_leases:' || p_lease_subjects[v_i], 0));
    delete from rate_leases l where l.subject = p_lease_subjects[v_i] and l.expires_at <= p_now;
    v_leases[v_i] := (select count(*) from rate_leases l where l.subject = p_lease_subjects[v_i]);
  end loop;

  if v_any_raised then
    for v_r in 1 .. cardinality(p_request_ends) loop
      for v_k in v_start .. p_request_ends[v_r] loop
        p_counter_limits[v_k] := coalesce((v_raised->>(p_request_keys[v_r]::text || ' ' || p_buckets[p_counter_refs[v_k]]))::integer, p_counter_limits[v_k]);
      end loop;
      p_lease_limits[v_r] := coalesce((v_raised->>(p_request_keys[v_r]::text || ' in_flight'))::integer, p_lease_limits[v_r]);
      v_start := p_request_ends[v_r] + 1;
    end loop;
    v_start := 1;
  end if;

  for v_r in 1 .. cardinality(p_request_ends) loop
    v_room := true;
    for v_k in v_start .. p_request_ends[v_r] loop
      if v_counts[p_counter_refs[v_k]] >= p_counter_limits[v_k] then
        v_room := false;
      end if;
    end loop;
    v_lease := p_request_leases[v_r];
    if v_lease > 0 and v_leases[v_lease] >= p_lease_limits[v_r] then
      v_room := false;
    end if;

    if v_room then
      for v_k in v_start .. p_request_ends[v_r] loop
        v_i := p_counter_refs[v_k];
        v_counts[v_i] := v_counts[v_i] + 1;
      end loop;
      if v_lease > 0 then
        v_leases[v_lease] := v_leases[v_lease] + 1;
        v_taken_ids := v_taken_ids || p_lease_ids[v_r];
        v_taken_subjects := v_taken_subjects || p_lease_subjects[v_lease];
      end if;
    end if;

    out_request := v_r - 1;
    out_allowed := v_room;
    for v_k in v_start .. p_request_ends[v_r] loop
      v_i := p_counter_refs[v_k];
      out_bucket := p_buckets[v_i];
      out_limit := p_counter_limits[v_k];
      out_used := v_counts[v_i];
      return next;
    end loop;
    if v_lease > 0 then
      out_bucket := 'in_flight';
      out_limit := p_lease_limits[v_r];
      out_used := v_leases[v_lease];
      return next;
    end if;
    v_start := p_request_ends[v_r] + 1;
  end loop;

  if v_counts is distinct from v_written then
    update rate_counters c set count = t.n
      from unnest(p_subjects, p_buckets, v_counts, v_written) as t(s, b, n, w)
      where t.n <> t.w and c.subject = t.s and c.bucket = t.b;
  end if;
  if cardinality(v_taken_ids) > 0 then
    insert into rate_leases (id, subject, expires_at) select t.id, t.s, p_lease_expires from unnest(v_taken_ids, v_taken_subjects) as t(id, s);
  end if;
end
$fn$`;
