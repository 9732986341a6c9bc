import type { JsonObject } from "@bufbuild/protobuf";
import type { EnvironmentName, StoredTraceContext } from "@svc/platform";
import type { GateEventSubject } from "../events/gate-events.ts";
import type { StoredRequest, StoredStatus } from "./status-record.ts";

/** A verification request as stored in `requests`. */
export interface RequestRow {
  id: string;
  organization_id: string;
  environment: EnvironmentName;
  gate_key: string;
  gate_type: "human" | "age";
  age_threshold: number | null;
  session_id: string;
  status: StoredStatus;
  flow_secret_hash: Buffer;
  blocking_user_hash: Buffer | null;
  partner_ref_hash: Buffer | null;
  partner_ref_sealed: Buffer | null;
  svc_user_id: string | null;
  human_id: string | null;
  mode: "private" | "linked-account";
  sdk_type: "signal" | "presence";
  notarize_offered: boolean;
  return_url: string | null;
  parent_request_id: string | null;
  metadata: JsonObject | null;
  pushed_to_devices: number;
  created_at: Date;
  expires_at: Date;
  confirming_until: Date | null;
  opened_at: Date | null;
  ended_at: Date | null;
  ended_by: string | null;
  trusted: boolean | null;
  first_time: boolean | null;
  age_verdict: string | null;
  failure_reason: string | null;
  token: string | null;
  token_expires_at: Date | null;
  event_sent: boolean;
  /** The creating call's W3C traceparent; null while tracing is off. */
  trace_context: StoredTraceContext;
}

const date = (value: Date | string | null): Date | null => (value === null ? null : new Date(value));

export const storedRequest = (row: RequestRow): StoredRequest => ({
  status: row.status,
  gateType: row.gate_type,
  expiresAt: new Date(row.expires_at),
  confirmingUntil: date(row.confirming_until),
  trusted: row.trusted,
  firstTime: row.first_time,
  failureReason: row.failure_reason,
  ageVerdict: row.age_verdict,
  token: row.token,
  tokenExpiresAt: date(row.token_expires_at),
});

export const eventSubject = (row: RequestRow): GateEventSubject => ({
  requestId: row.id,
  organizationId: row.organization_id,
  environment: row.environment,
  metadata: row.metadata,
});
