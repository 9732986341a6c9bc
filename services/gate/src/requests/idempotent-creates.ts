import { createHash } from "node:crypto";
import type { EnvironmentName } from "@svc/platform";
import type pg from "pg";
import type { GateFactsLookup } from "../gates/gate-facts.ts";
import type { PartnerRefs } from "../partner-refs.ts";
import type { CreatedLink } from "./created-link.ts";

/**
 * create-verification-link with the gateway's scoped Idempotency-Key hash (the "idempotency token").
 * The call that consumes the session leaves the token's SHA-256 on it, and the request's flow secret
 * sealed (the request itself keeps only its hash); a later call on the same session with the same
 * token answers that request again instead of finding the grant token used. This is what makes a
 * create whose answer was lost (gate died between its commit and its answer) recoverable.
 */
export const tokenHash = (idempotencyToken: string): Buffer => createHash("sha256").update(idempotencyToken).digest();

/** The flow secret is sealed under its own associated data, so a sealed reference never opens as one. */
const flowSecretData = (requestId: string) => `flow-secret:${requestId}`;

export const sealFlowSecret = (refs: PartnerRefs, requestId: string, flowSecret: string): Buffer =>
  refs.seal(flowSecretData(requestId), flowSecret);

interface CreatedRow {
  id: string;
  ended_by: string | null;
  organization_id: string;
  environment: EnvironmentName;
  gate_key: string;
  created_at: Date;
  expires_at: Date;
  pushed_to_devices: number;
  sdk_type: "signal" | "presence";
  mode: "private" | "linked-account";
  notarize_offered: boolean;
  flow_secret_sealed: Buffer;
}

export class IdempotentCreates {
  readonly #db: Pick<pg.Pool, "query">;
  readonly #refs: PartnerRefs;
  readonly #gates: GateFactsLookup;

  constructor(deps: { db: Pick<pg.Pool, "query">; refs: PartnerRefs; gates: GateFactsLookup }) {
    this.#db = deps.db;
    this.#refs = deps.refs;
    this.#gates = deps.gates;
  }

  /** The request the session's create made with this token; undefined when it made none with it. */
  async createdWith(sessionId: string, idempotencyToken: string): Promise<CreatedLink | undefined> {
    const { rows } = await this.#db.query<CreatedRow>({
      name: "idempotent_create",
      text: `select r.id, r.ended_by, r.organization_id, r.environment, r.gate_key, r.created_at, r.expires_at, r.pushed_to_devices,
         r.sdk_type, r.mode, r.notarize_offered, s.flow_secret_sealed
       from sessions s join requests r on r.id = s.request_id
       where s.id = $1 and s.idempotency_token_hash = $2 and s.flow_secret_sealed is not null`,
      values: [sessionId, tokenHash(idempotencyToken)],
    });
    const row = rows[0];
    if (!row) return undefined;
    const gate = await this.#gates.of(row.organization_id, row.environment, row.gate_key);
    if (!gate) throw new Error(`request ${row.id} names gate ${row.gate_key}, which has no row`);
    const flowSecret = this.#refs.open(flowSecretData(row.id), row.flow_secret_sealed);
    return {
      requestId: row.id,
      // The answer the first call gave: a Recent Presence pass, or pending, whatever became of it since.
      status: row.ended_by === "presence" ? "pass" : "pending",
      flowSecret,
      createdAt: row.created_at,
      expiresAt: row.expires_at,
      pushedToDevices: row.pushed_to_devices,
      sdkType: row.sdk_type,
      authMode: row.mode,
      gate,
      organizationId: row.organization_id,
      notarizeOffered: row.notarize_offered,
    };
  }
}
