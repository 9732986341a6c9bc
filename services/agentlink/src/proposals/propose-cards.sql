-- inquire's write for a batch of calls (called by card-writer.ts; inquire.ts decides everything the
-- rows say). Each item's card, its audit row and its outbox row commit together, in this one
-- statement's transaction.
--
-- Idempotency on (agent, request_id): an item whose request_id already has a card writes nothing and
-- answers that card as a replay. The card may have been committed after inquire read it was missing
-- (the concurrent first call): the insert waits for that transaction and skips its item, and the
-- select at the end, a statement of its own with a fresh snapshot, finds the winner. The writer never
-- puts two items with the same (agent, request_id) in one batch.
create or replace function propose_cards(p_items jsonb)
returns table (ordinal integer, id uuid, status text, svc_user_id uuid, ttl_at timestamptz, replay boolean)
language plpgsql as $$
#variable_conflict use_column
begin
  with items as (
    select * from jsonb_to_recordset(p_items) as i(
      ordinal integer, id uuid, agent_id uuid, request_id uuid, svc_user_id uuid, summary_title text, category text,
      canonical_card text, card_digest text, status text, ttl_at timestamptz, created_at timestamptz, named_by text,
      warnings jsonb, audit_action text, audit_actor text, audit_at timestamptz, audit_detail jsonb,
      event_subject text, event_message_id text, event_payload bytea, event_created_at timestamptz)
  ),
  inserted as (
    insert into card (id, agent_id, request_id, svc_user_id, summary_title, category, canonical_card, card_digest,
      status, ttl_at, created_at, named_by, warnings)
    select i.id, i.agent_id, i.request_id, i.svc_user_id, i.summary_title, i.category, i.canonical_card, i.card_digest,
      i.status, i.ttl_at, i.created_at, i.named_by, i.warnings
    from items i order by i.ordinal
    on conflict (agent_id, request_id) do nothing
    returning card.id
  ),
  audited as (
    insert into card_audit (card_id, action, actor, at, detail)
    select i.id, i.audit_action, i.audit_actor, i.audit_at, i.audit_detail
    from items i join inserted on inserted.id = i.id order by i.ordinal
  )
  insert into outbox (subject, message_id, payload, created_at)
  select i.event_subject, i.event_message_id, i.event_payload, i.event_created_at
  from items i join inserted on inserted.id = i.id order by i.ordinal;

  return query
  select i.ordinal, c.id, c.status, c.svc_user_id, c.ttl_at, c.id <> i.id
  from jsonb_to_recordset(p_items) as i(ordinal integer, id uuid, agent_id uuid, request_id uuid)
  join card c on c.agent_id = i.agent_id and c.request_id = i.request_id;
end $$;
