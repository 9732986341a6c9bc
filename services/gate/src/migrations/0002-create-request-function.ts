import { Migration } from "@svc/platform";

/**
 * create-verification-link's whole write as one statement (see requests/create-link.ts): the rules are
 * decided in TypeScript from the session's and the gate's unchanging facts, and this function applies
 * them atomically against what may have changed since (the token's use, the gate's status, other
 * pending requests, recent ceremonies). Refusals are returned before anything is written, so a rejected
 * call consumes nothing; their order is the operation's: 401, 400, 403, 409.
 */
export class CreateRequestFunction extends Migration {
  override up(): void {
    this.addSql(`create function create_verification_request(
      p_session_id uuid, p_organization_id uuid, p_environment text, p_gate_id uuid, p_gate_allowed boolean,
      p_request_id text, p_flow_secret_hash bytea, p_blocking_hash bytea, p_parent_request_id text,
      p_presence_human_id uuid, p_presence_ref_hash bytea, p_presence_since timestamptz,
      p_ref_hash bytea, p_ref_sealed bytea, p_svc_user_id uuid, p_mode text, p_sdk_type text, p_notarize_offered boolean,
      p_return_url text, p_metadata jsonb, p_pushed_to_devices integer, p_now timestamptz,
      p_expires_at timestamptz, p_pass_expires_at timestamptz)
    returns table (outcome text, human_id uuid)
    language plpgsql as $$
    declare
      v_gate gates%rowtype;
      v_presence uuid;
      v_passed boolean := false;
    begin
      -- Locks the session: of concurrent calls with one token, one proceeds and the others then find it used.
      perform 1 from sessions s
        where s.id = p_session_id and s.organization_id = p_organization_id and s.environment = p_environment
          and s.consumed_at is null and s.revoked_at is null and s.expires_at > p_now
        for update;
      if not found then return query select 'unauthenticated', null::uuid; return; end if;

      -- Only an active gate accepts requests (gate-status.ts, acceptsRequests).
      select * into v_gate from gates g where g.id = p_gate_id and g.status = 'active';
      if not found then return query select 'no_active_gate', null::uuid; return; end if;
      if not p_gate_allowed then return query select 'gate_not_allowed', null::uuid; return; end if;

      if p_blocking_hash is not null then
        -- Two sessions of one user racing past the check would both create: serialize per user and gate.
        perform pg_advisory_xact_lock(hashtextextended(
          p_organization_id::text || ':' || p_environment || ':' || v_gate.key || ':' || encode(p_blocking_hash, 'base64'), 0));
        perform 1 from requests r
          where r.organization_id = p_organization_id and r.environment = p_environment and r.gate_key = v_gate.key
            and r.blocking_user_hash = p_blocking_hash and r.status = 'pending' and r.expires_at > p_now
            and r.id is distinct from p_parent_request_id;
        if found then return query select 'conflict', null::uuid; return; end if;
      end if;

      -- Recent Presence: the latest ceremony of the person on this gate within the window, by one index or the other.
      if p_presence_human_id is not null then
        select r.human_id, true into v_presence, v_passed from requests r
          where r.organization_id = p_organization_id and r.environment = p_environment and r.gate_key = v_gate.key
            and r.human_id = p_presence_human_id and r.status = 'completed' and r.ended_at > p_presence_since
          order by r.ended_at desc limit 1;
      elsif p_presence_ref_hash is not null then
        select r.human_id, true into v_presence, v_passed from requests r
          where r.organization_id = p_organization_id and r.environment = p_environment and r.gate_key = v_gate.key
            and r.partner_ref_hash = p_presence_ref_hash and r.status = 'completed' and r.ended_at > p_presence_since
          order by r.ended_at desc limit 1;
      end if;
      v_passed := coalesce(v_passed, false);

      update sessions set consumed_at = p_now, request_id = p_request_id where id = p_session_id;

      insert into requests (id, organization_id, environment, gate_key, gate_type, age_threshold, session_id, status, flow_secret_hash,
        blocking_user_hash, partner_ref_hash, partner_ref_sealed, svc_user_id, human_id, mode, sdk_type, notarize_offered, return_url,
        parent_request_id, metadata, pushed_to_devices, created_at, expires_at, ended_at, ended_by)
      values (p_request_id, p_organization_id, p_environment, v_gate.key, v_gate.type, v_gate.age_threshold, p_session_id,
        case when v_passed then 'pass' else 'pending' end, p_flow_secret_hash,
        case when v_passed then null else p_blocking_hash end, p_ref_hash,
        case when v_passed then null else p_ref_sealed end, p_svc_user_id, v_presence, p_mode,
        case when v_passed then 'presence' else p_sdk_type end, p_notarize_offered, p_return_url, p_parent_request_id, p_metadata,
        case when v_passed then 0 else p_pushed_to_devices end, p_now,
        case when v_passed then p_pass_expires_at else p_expires_at end,
        case when v_passed then p_now end, case when v_passed then 'presence' end);

      if p_parent_request_id is not null and not v_passed then
        -- The presence ceremony replaces its pre-check, so one user never has two pending requests.
        update requests set status = 'expired', ended_at = p_now, ended_by = 'superseded', partner_ref_sealed = null
          where id = p_parent_request_id and organization_id = p_organization_id and environment = p_environment
            and gate_key = v_gate.key and status = 'pending' and blocking_user_hash is not distinct from p_blocking_hash;
      end if;

      return query select case when v_passed then 'pass' else 'pending' end, v_presence;
    end $$`);
  }
}
