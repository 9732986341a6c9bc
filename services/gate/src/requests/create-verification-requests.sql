-- create-verification-link's write for a batch of calls (called by request-writer.ts). Each item is
-- decided on its own against what may have changed since the caller read the session's and the gate's
-- unchanging facts (create-link.ts decides the rest, blocking-rule.ts who the 409 user is). A refused
-- item writes nothing, so its grant token stays usable.
--
-- The refusal order (spec "Errors"): 401 'unauthenticated' (the token is used, revoked, expired or not
-- the caller's) → 400 'no_active_gate' → 403 'gate_not_allowed' → 409 'conflict' → accepted.
--
-- The 409 rule's database half (clauses in blocking-rule.ts): an item with a 409 user (blocking_hash)
-- is refused when a request of the same organization, environment, gate and user is pending and
-- unexpired; completed, failed, expired, pass and past-window requests never block, and neither does
-- the item's own pre-check (parent_request_id), which it replaces.
--
-- The writer never puts two items with the same session, blocking user or parent request in one
-- batch, so the items of one statement cannot interact; across batches and replicas:
-- - the token is consumed by a conditional update, so of concurrent calls with one token exactly one
--   finds it unused (the others' updates re-check the row after the winner commits);
-- - the 409 check runs under an advisory lock per user and gate, taken (in one global order) by a
--   statement of its own, so the check's snapshot sees every request committed by an earlier holder.
--
-- Each item's push trigger comes back with the id of its outbox row, so that gate's relay can publish it at
-- once (outbox.ts, publishCommitted). The result's columns changed with that, which "create or replace" cannot do.
drop function if exists create_verification_requests(jsonb, bigint[], text[], text[]);
create function create_verification_requests(p_items jsonb, p_lock_keys bigint[], p_children text[], p_parents text[])
returns table (ordinal integer, outcome text, push_event_id bigint)
language plpgsql as $$
begin
  if cardinality(p_lock_keys) > 0 then
    perform pg_advisory_xact_lock(k) from unnest(p_lock_keys) k order by k;
  end if;

  return query
  with items as (
    select * from jsonb_to_recordset(p_items) as i(
      ordinal integer, session_id uuid, organization_id uuid, environment text,
      gate_id uuid, gate_key text, gate_type text, age_threshold integer, gate_allowed boolean,
      request_id text, flow_secret_hash bytea, blocking_hash bytea, parent_request_id text,
      presence_human_id uuid, presence_ref_hash bytea, presence_since timestamptz,
      ref_hash bytea, ref_sealed bytea, svc_user_id uuid, mode text, sdk_type text, notarize_offered boolean,
      return_url text, metadata jsonb, pushed_to_devices integer, now timestamptz, expires_at timestamptz, pass_expires_at timestamptz,
      idempotency_token_hash bytea, flow_secret_sealed bytea, sandbox_behavior text, sandbox_answer_at timestamptz, trace_context text,
      push_subject text, push_message_id text, push_payload bytea, push_trace_context text)
  ),
  checked as (
    select i.*, coalesce(by_human.found, by_ref.found, false) as passed, coalesce(by_human.human_id, by_ref.human_id) as presence_human,
      -- The refusals, in the operation's order: 401, 400, 403, 409.
      case
        when not exists (select 1 from sessions s where s.id = i.session_id and s.organization_id = i.organization_id
                           and s.environment = i.environment and s.consumed_at is null and s.revoked_at is null and s.expires_at > i.now)
          then 'unauthenticated'
        when not exists (select 1 from gates g where g.id = i.gate_id and g.status = 'active') then 'no_active_gate'
        when not i.gate_allowed then 'gate_not_allowed'
        -- The 409 rule: only a pending request inside its window blocks, never the item's own pre-check.
        when i.blocking_hash is not null and exists (select 1 from requests r
               where r.organization_id = i.organization_id and r.environment = i.environment and r.gate_key = i.gate_key
                 and r.blocking_user_hash = i.blocking_hash and r.status = 'pending' and r.expires_at > i.now
                 and r.id is distinct from i.parent_request_id)
          then 'conflict'
        else 'accepted'
      end as verdict
    from items i
    -- Recent Presence: the person's latest ceremony on this gate within the window, by one index or the
    -- other; an item that asks for neither lookup scans neither.
    left join lateral (
      select true as found, r.human_id from requests r
        where i.presence_human_id is not null
          and r.organization_id = i.organization_id and r.environment = i.environment and r.gate_key = i.gate_key
          and r.human_id = i.presence_human_id and r.status = 'completed' and r.ended_at > i.presence_since
        order by r.ended_at desc limit 1) by_human on true
    left join lateral (
      select true as found, r.human_id from requests r
        where i.presence_ref_hash is not null
          and r.organization_id = i.organization_id and r.environment = i.environment and r.gate_key = i.gate_key
          and r.partner_ref_hash = i.presence_ref_hash and r.status = 'completed' and r.ended_at > i.presence_since
        order by r.ended_at desc limit 1) by_ref on i.presence_human_id is null
  ),
  -- The update finds its sessions by primary key through "= any(array)", so no statistics, stale or
  -- not, can turn it into a scan of the table. A call with an Idempotency-Key leaves it on the session,
  -- with the flow secret sealed, for its retry (idempotent-creates.ts).
  consumed as (
    update sessions s set consumed_at = c.now, request_id = c.request_id,
      idempotency_token_hash = c.idempotency_token_hash, flow_secret_sealed = c.flow_secret_sealed
      from checked c
      where s.id = any(array(select session_id from checked where verdict = 'accepted'))
        and c.verdict = 'accepted' and s.id = c.session_id
        and s.consumed_at is null and s.revoked_at is null and s.expires_at > c.now
      returning s.id
  ),
  inserted as (
    insert into requests (id, organization_id, environment, gate_key, gate_type, age_threshold, session_id, status, flow_secret_hash,
      blocking_user_hash, partner_ref_hash, partner_ref_sealed, svc_user_id, human_id, mode, sdk_type, notarize_offered, return_url,
      parent_request_id, metadata, pushed_to_devices, created_at, expires_at, ended_at, ended_by, sandbox_behavior, sandbox_answer_at, trace_context)
    select a.request_id, a.organization_id, a.environment, a.gate_key, a.gate_type, a.age_threshold, a.session_id,
      case when a.passed then 'pass' else 'pending' end, a.flow_secret_hash,
      case when a.passed then null else a.blocking_hash end, a.ref_hash,
      case when a.passed then null else a.ref_sealed end, a.svc_user_id, a.presence_human, a.mode,
      case when a.passed then 'presence' else a.sdk_type end, a.notarize_offered, a.return_url, a.parent_request_id, a.metadata,
      case when a.passed then 0 else a.pushed_to_devices end, a.now,
      case when a.passed then a.pass_expires_at else a.expires_at end,
      case when a.passed then a.now end, case when a.passed then 'presence' end,
      -- A pass is answered already: its sandbox human has nothing left to answer.
      case when a.passed then null else a.sandbox_behavior end, case when a.passed then null else a.sandbox_answer_at end, a.trace_context
    from checked a
    where a.session_id in (select id from consumed)
  ),
  -- A pending request that names a person: account pushes it to their devices (push_trigger.proto).
  triggered as (
    insert into outbox (subject, message_id, payload, created_at, trace_context)
    select a.push_subject, a.push_message_id, a.push_payload, a.now, a.push_trace_context
    from checked a
    where a.session_id in (select id from consumed) and not a.passed and a.push_payload is not null
    returning id, message_id
  )
  -- Accepted but not consumed: another call spent the token after this statement's snapshot.
  select c.ordinal,
    case when c.verdict <> 'accepted' then c.verdict
         when c.session_id not in (select id from consumed) then 'unauthenticated'
         when c.passed then 'pass' else 'pending' end,
    t.id
  from checked c left join triggered t on t.message_id = c.push_message_id;

  -- A presence ceremony replaces its pre-check, so one user never has two pending requests. Only
  -- for the rare batch that names a parent, by a statement of its own after the children are written.
  if cardinality(p_parents) > 0 then
    update requests r set status = 'expired', ended_at = child.created_at, ended_by = 'superseded', partner_ref_sealed = null
      from requests child, unnest(p_children, p_parents) as family(child_id, parent_id)
      where child.id = family.child_id and child.status = 'pending' and r.id = family.parent_id
        and r.organization_id = child.organization_id and r.environment = child.environment and r.gate_key = child.gate_key
        and r.status = 'pending' and r.blocking_user_hash is not distinct from child.blocking_user_hash;
  end if;
end $$;
