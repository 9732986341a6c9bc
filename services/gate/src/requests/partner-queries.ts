import type { MikroORM } from "@mikro-orm/postgresql";
import type { Clock, EventBus } from "@svc/platform";
import type { PartnerCaller } from "../caller.ts";
import { acceptsRequests } from "../gates/gate-status.ts";
import { findGate, type Gate } from "../gates/gate-store.ts";
import type { PartnerRefs } from "../partner-refs.ts";
import { refuse } from "../refusal.ts";
import { revokedUser } from "./blocking-rule.ts";
import { requestIdForm } from "./request-ids.ts";
import { type RequestRow, storedRequest } from "./request-row.ts";
import { publishRequestsChanged } from "./request-watch.ts";
import { type StatusRecord, statusRecord } from "./status-record.ts";

/** The partner's reads and its revoke: each scoped to the caller's organization and environment. */
export class PartnerQueries {
  readonly #orm: MikroORM;
  readonly #clock: Clock;
  readonly #refs: PartnerRefs;
  readonly #bus: Pick<EventBus, "nc" | "subjectPrefix">;

  constructor(options: {
    orm: MikroORM;
    clock: Clock;
    refs: PartnerRefs;
    bus: Pick<EventBus, "nc" | "subjectPrefix">;
  }) {
    this.#orm = options.orm;
    this.#bus = options.bus;
    this.#clock = options.clock;
    this.#refs = options.refs;
  }

  /** decisions.md: another organization's request id reads `found: false`, `not_found`. */
  async status(caller: PartnerCaller, requestId: string): Promise<StatusRecord> {
    const now = this.#clock.now();
    if (!requestIdForm.test(requestId)) return statusRecord(undefined, now);
    const rows = await this.#orm.em
      .fork()
      .execute<RequestRow[]>(`select * from requests where id = ? and organization_id = ? and environment = ?`, [
        requestId,
        caller.organizationId,
        caller.environment,
      ]);
    return statusRecord(rows[0] ? storedRequest(rows[0]) : undefined, now);
  }

  /** revoke-verification: ends exactly the requests the 409 rule says would block a new one (and wakes their status long-polls and people's inboxes). */
  async revoke(
    caller: PartnerCaller,
    gateKey: string,
    partnerUserId: string,
    allowedGates: readonly string[],
  ): Promise<number> {
    const user = revokedUser(partnerUserId);
    if (user === undefined) throw refuse("invalid", "partner_user_id is required");
    const em = this.#orm.em.fork();
    const gate = await findGate(em, caller.organizationId, caller.environment, gateKey);
    if (!gate || !acceptsRequests(gate.status))
      throw refuse("invalid", `no active gate ${JSON.stringify(gateKey)} in the ${caller.environment} environment`);
    if (allowedGates.length > 0 && !allowedGates.includes(gate.key))
      throw refuse("forbidden", `gate ${JSON.stringify(gate.key)} is not allowed for this key`);
    const now = this.#clock.now();
    const rows = await em.execute<{ id: string; status: string; svc_user_id: string | null }[]>(
      `update requests set status = 'expired', ended_at = ?, ended_by = 'revoked', partner_ref_sealed = null
        where organization_id = ? and environment = ? and gate_key = ? and blocking_user_hash = ? and status = 'pending' and expires_at > ? returning id, status, svc_user_id`,
      [now, caller.organizationId, caller.environment, gate.key, this.#refs.hash(caller.organizationId, user), now],
    );
    publishRequestsChanged(this.#bus, rows);
    return rows.length;
  }

  /** What the widget needs to render a gate; any status, so it can tell a draft or archived gate apart. */
  async partnerConfig(caller: PartnerCaller, gateKey: string, allowedGates: readonly string[]): Promise<Gate> {
    const gate = await findGate(this.#orm.em.fork(), caller.organizationId, caller.environment, gateKey);
    if (!gate) throw refuse("invalid", `no gate ${JSON.stringify(gateKey)} in the ${caller.environment} environment`);
    if (allowedGates.length > 0 && !allowedGates.includes(gate.key))
      throw refuse("forbidden", `gate ${JSON.stringify(gate.key)} is not allowed for this key`);
    return gate;
  }
}
