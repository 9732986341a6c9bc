-- `decide_rate_limits`, called by rate-limiter.ts: the rate-limit decision of every gateway replica.
--
-- Decides a batch of requests in one statement, in order, each all or nothing.
--
-- The counters the batch touches come as arrays, distinct and in one fixed order, so that concurrent
-- batches lock them in the same order and never deadlock. One statement locks them all (creating a
-- counter, or starting its new window, as needed), adds what the whole batch asks of each
-- (`p_demands`) and reads each counter's limit: the tier's, or its key's raised one (key_rate_limits).
-- When every counter stays within its limit and no request asks for an in_flight lease, that is the
-- outcome: every request has room, and nothing more runs.
--
-- Otherwise the requests are walked in order from the counts before the batch: a request that finds
-- room in every one of its buckets (and its in_flight cap) is counted in all of them and takes its
-- lease; one that does not is counted in none. Where that ends below what the first statement wrote,
-- the count is set back before the function returns; the row locks are held throughout, so no other
-- transaction ever sees the optimistic count.
--
-- Request r counts in the counters `p_counter_refs[p_request_ends[r - 1] + 1 .. p_request_ends[r]]`
-- and, where `p_request_leases[r]` is not 0, asks for a lease of that lease subject with the id
-- `p_lease_ids[r]`. Instants are milliseconds since the epoch. The answer is what the batch started
-- from (each counter's count and limit, each lease subject's leases and cap) and which requests were
-- allowed (null: all of them), from which the caller tells each request its own counts.
create or replace function "decide_rate_limits"(
  p_subjects text[],
  p_buckets text[],
  p_window_starts bigint[],
  p_window_ends bigint[],
  p_demands integer[],
  p_limits integer[],
  p_key_ids uuid[],
  p_request_ends integer[],
  p_counter_refs integer[],
  p_lease_subjects text[],
  p_lease_limits integer[],
  p_lease_keys uuid[],
  p_request_leases integer[],
  p_lease_ids uuid[],
  p_lease_expires bigint,
  p_now bigint,
  out counts_before integer[],
  out limits integer[],
  out allowed boolean[],
  out leases_before integer[],
  out lease_limits integer[]
) language plpgsql as $fn$
declare
  v_written integer[];
  v_counts integer[];
  v_leases integer[] := '{}';
  v_fits boolean;
  v_taken_ids uuid[] := '{}';
  v_taken_subjects text[] := '{}';
  v_r integer;
  v_k integer;
  v_i integer;
  v_start integer := 1;
  v_lease integer;
  v_room boolean;
begin
  with asked as (
    select t.s, t.b, t.w, t.e, t.d, t.l, t.k, t.i
      from unnest(p_subjects, p_buckets, p_window_starts, p_window_ends, p_demands, p_limits, p_key_ids) with ordinality as t(s, b, w, e, d, l, k, i)
  ), written as (
    insert into rate_counters as c (subject, bucket, window_start, count, expires_at)
      select a.s, a.b, a.w, a.d, to_timestamp(a.e / 1000.0) from asked a order by a.i
      on conflict on constraint rate_counters_pkey do update
        set count = case when c.window_start < excluded.window_start then 0 else c.count end + excluded.count,
            window_start = greatest(c.window_start, excluded.window_start),
            expires_at = greatest(c.expires_at, excluded.expires_at)
      returning c.subject, c.bucket, c.count
  )
  select array_agg(w.count order by a.i), array_agg(w.count - a.d order by a.i), array_agg(coalesce(o."limit", a.l) order by a.i),
         bool_and(w.count <= coalesce(o."limit", a.l))
    into v_written, counts_before, limits, v_fits
    from asked a
    join written w on w.subject = a.s and w.bucket = a.b
    left join key_rate_limits o on o.key_id = a.k and o.bucket = a.b;

  if v_fits and coalesce(cardinality(p_lease_subjects), 0) = 0 then
    return;
  end if;

  for v_i in 1 .. coalesce(cardinality(p_lease_subjects), 0) loop
    perform pg_advisory_xact_lock(hashtextextended('rate_leases:' || p_lease_subjects[v_i], 0));
    delete from rate_leases l where l.subject = p_lease_subjects[v_i] and l.expires_at <= to_timestamp(p_now / 1000.0);
    v_leases[v_i] := (select count(*) from rate_leases l where l.subject = p_lease_subjects[v_i]);
  end loop;
  leases_before := v_leases;
  if cardinality(v_leases) > 0 then
    lease_limits := array(
      select coalesce(o."limit", t.l)
        from unnest(p_lease_limits, p_lease_keys) with ordinality as t(l, k, i)
        left join key_rate_limits o on o.key_id = t.k and o.bucket = 'in_flight'
       order by t.i);
  end if;

  v_counts := counts_before;
  allowed := '{}';
  for v_r in 1 .. cardinality(p_request_ends) loop
    v_room := true;
    for v_k in v_start .. p_request_ends[v_r] loop
      v_i := p_counter_refs[v_k];
      if v_counts[v_i] >= limits[v_i] then
        v_room := false;
      end if;
    end loop;
    v_lease := coalesce(p_request_leases[v_r], 0);
    if v_lease > 0 and v_leases[v_lease] >= lease_limits[v_lease] then
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
    allowed[v_r] := v_room;
    v_start := p_request_ends[v_r] + 1;
  end loop;

  if v_counts is distinct from v_written then
    update rate_counters c set count = t.n
      from unnest(p_subjects, p_buckets, v_counts, v_written) as t(s, b, n, w)
      where t.n <> t.w and c.subject = t.s and c.bucket = t.b;
  end if;
  if cardinality(v_taken_ids) > 0 then
    insert into rate_leases (id, subject, expires_at)
      select t.id, t.s, to_timestamp(p_lease_expires / 1000.0) from unnest(v_taken_ids, v_taken_subjects) as t(id, s);
  end if;
end
$fn$;

-- Raised by the statement that counts a batch without `decide_rate_limits` (count-statement.ts) when a
-- counter went over its limit, so that the statement rolls back and the batch is decided here instead.
create or replace function "rate_counters_overflowed"() returns bytea[] language plpgsql volatile as $fn$
begin
  raise exception 'a rate counter of the batch went over its limit' using errcode = 'SVRL1';
end
$fn$;
