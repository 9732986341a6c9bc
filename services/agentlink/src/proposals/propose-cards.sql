-- inquire's one statement for a batch of calls (called by card-writer.ts). For each item it reads the
-- facts inquire's checks need and, when the item carries a new card, writes it with its audit row and
-- its outbox row, all committed together. The order of the checks and their refusals are inquire.ts's;
-- here a card is written only when every fact it reads allows it:
--   the agent is active, the category is one of its categories, the person is found (the agent's
--   active binding with the opaque_id lookup, or the svc_user_id inquire was given; for a quorum card
--   every approver's binding, the card's person then being the first), and the agent's request_id has
--   no card yet (idempotency on (agent, request_id)). A quorum card's approvers get their rows with it.
--
-- A new card's outbox rows come back with it (ids and all), so that agentlink's relay can publish them at once
-- (outbox.ts, publishCommitted).
--
-- The facts are returned as this first statement saw them, so they are the ones the write obeyed. The
-- card is looked up by a second statement with a fresh snapshot: a card a concurrent first call
-- committed after the first statement began (its insert waited for that call and skipped) is found
-- there, and answered as a replay. The writer never puts two items with the same (agent, request_id)
-- in one batch.
drop function if exists propose_cards(jsonb);
create function propose_cards(p_items jsonb)
returns table (ordinal integer, agent_active boolean, category_allowed boolean, person uuid,
  missing_approver integer, approvers uuid[],
  card_id uuid, card_status text, card_svc_user_id uuid, card_ttl_at timestamptz, written boolean, events jsonb)
language plpgsql as $$
#variable_conflict use_column
declare
  v_facts jsonb;
begin
  with items as (
    select * from jsonb_to_recordset(p_items) as i(
      ordinal integer, agent_id uuid, request_id uuid, opaque_id_lookup text, given_svc_user_id uuid, category text,
      approver_lookups jsonb, quorum_approve smallint, quorum_deny smallint,
      -- The new card, or nulls when inquire has already refused the call.
      id uuid, summary_title text, card_category text, canonical_card text, card_digest text, status text,
      ttl_at timestamptz, created_at timestamptz, named_by text, warnings jsonb, sandbox_answer_at timestamptz,
      audit_action text, audit_actor text, audit_at timestamptz, audit_detail jsonb,
      event_subject text, event_message_id text, event_payload bytea, event_created_at timestamptz,
      event_trace_context text, push_subject text, push_message_id text, push_payload bytea)
  ),
  facts as (
    select i.*, coalesce(a.status = 'active', false) as agent_active,
      coalesce(i.category is null or i.category = any(a.categories), false) as category_allowed,
      case when i.approver_lookups is not null then case when q.missing is null then q.found[1] end
        when i.opaque_id_lookup is null then i.given_svc_user_id else b.svc_user_id end as person,
      q.missing, q.found as approvers
    from items i
    -- Each look-up is a lateral one with "limit 1", so that it stays one index probe per item: joined
    -- plainly, the planner (which takes jsonb_to_recordset for 100 rows) hashes a scan of the table.
    left join lateral (select status, categories from agent where id = i.agent_id limit 1) a on true
    left join lateral (
      select svc_user_id from binding
        where agent_id = i.agent_id and opaque_id_lookup = i.opaque_id_lookup and unbound_at is null limit 1) b on true
    -- A quorum card's approvers in the agent's order, and the first (from 0) that no active binding names.
    left join lateral (
      select array_agg(ab.svc_user_id order by l.ord) as found,
        min(l.ord) filter (where ab.svc_user_id is null) - 1 as missing
      from jsonb_array_elements_text(i.approver_lookups) with ordinality as l(lookup, ord)
      left join lateral (
        select svc_user_id from binding
          where agent_id = i.agent_id and opaque_id_lookup = l.lookup and unbound_at is null limit 1) ab on true) q on true
  ),
  inserted as (
    insert into card as c (id, agent_id, request_id, svc_user_id, summary_title, category, canonical_card, card_digest,
      status, ttl_at, created_at, named_by, warnings, sandbox_answer_at, quorum_approve, quorum_deny, trace_context)
    select f.id, f.agent_id, f.request_id, f.person, f.summary_title, f.card_category, f.canonical_card, f.card_digest,
      f.status, f.ttl_at, f.created_at, f.named_by, f.warnings, f.sandbox_answer_at, f.quorum_approve, f.quorum_deny,
      f.event_trace_context
    from facts f
    where f.id is not null and f.agent_active and f.category_allowed and f.person is not null
    order by f.ordinal
    on conflict (agent_id, request_id) do nothing
    returning c.id
  ),
  audited as (
    insert into card_audit (card_id, action, actor, at, detail)
    select f.id, f.audit_action, f.audit_actor, f.audit_at, f.audit_detail
    from facts f join inserted on inserted.id = f.id order by f.ordinal
  ),
  asked as (
    insert into card_approver (card_id, svc_user_id, position)
    select f.id, a.svc_user_id, a.ord - 1
    from facts f join inserted on inserted.id = f.id
    cross join unnest(f.approvers) with ordinality as a(svc_user_id, ord)
  ),
  announced as (
    insert into outbox (subject, message_id, payload, created_at, trace_context)
    select f.event_subject, f.event_message_id, f.event_payload, f.event_created_at, f.event_trace_context
    from facts f join inserted on inserted.id = f.id order by f.ordinal
    returning id, subject, message_id, payload, trace_context
  ),
  -- One push trigger per person asked (push_trigger.proto): the payload written once without the person,
  -- who is appended as field 1 (tag 0x0a, length 36, the uuid's text).
  triggered as (
    insert into outbox (subject, message_id, payload, created_at, trace_context)
    select f.push_subject, f.push_message_id || asked.svc_user_id::text,
      f.push_payload || '\x0a24'::bytea || convert_to(asked.svc_user_id::text, 'UTF8'), f.event_created_at,
      f.event_trace_context
    from facts f join inserted on inserted.id = f.id
    cross join unnest(coalesce(f.approvers, array[f.person])) as asked(svc_user_id)
    returning id, subject, message_id, payload, trace_context
  ),
  written_events as (select * from announced union all select * from triggered)
  select jsonb_agg(jsonb_build_object('ordinal', f.ordinal, 'agent_id', f.agent_id, 'request_id', f.request_id,
      'id', f.id, 'agent_active', f.agent_active, 'category_allowed', f.category_allowed, 'person', f.person,
      'missing_approver', f.missing, 'approvers', f.approvers,
      'events', (select jsonb_agg(jsonb_build_object('id', e.id::text, 'subject', e.subject, 'message_id', e.message_id,
                   'payload', encode(e.payload, 'base64'), 'trace_context', e.trace_context))
                 from written_events e
                 where e.message_id = f.event_message_id or starts_with(e.message_id, f.push_message_id))))
    into v_facts
    from facts f;

  return query
  select f.ordinal, f.agent_active, f.category_allowed, f.person, f.missing_approver, f.approvers, c.id, c.status,
    c.svc_user_id, c.ttl_at, coalesce(c.id = f.id, false), f.events
  from jsonb_to_recordset(v_facts) as f(ordinal integer, agent_id uuid, request_id uuid, id uuid,
    agent_active boolean, category_allowed boolean, person uuid, missing_approver integer, approvers uuid[], events jsonb)
  left join lateral (
    select id, status, svc_user_id, ttl_at from card where agent_id = f.agent_id and request_id = f.request_id limit 1) c on true;
end $$;
