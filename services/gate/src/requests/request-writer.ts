import { createHash } from "node:crypto";
import type { JsonObject } from "@bufbuild/protobuf";
import {
  type CommittedEvent,
  NaturalBatcher,
  type OutboxRow,
  type StoredTraceContext,
  sqlDefinition,
} from "@svc/platform";
import type pg from "pg";

/**
 * `create_verification_requests`, which decides and writes a batch: the refusal order and the 409 rule's
 * database half. Applied at start whenever its text changes (the platform's stored definitions).
 */
export const createVerificationRequests = sqlDefinition(new URL("./create-verification-requests.sql", import.meta.url));

/** One create-verification-link call, decided in TypeScript, for `create_verification_requests` to apply. */
export interface NewRequest {
  sessionId: string;
  organizationId: string;
  environment: string;
  /** The gate the call names, with its unchanging facts; absent when no gate has that key. */
  gate: { id: string; key: string; type: string; ageThreshold: number | null } | undefined;
  gateAllowed: boolean;
  requestId: string;
  flowSecretHash: Buffer;
  /** The 409 rule's user; null when the request is not checked. */
  blockingHash: Buffer | null;
  parentRequestId: string | null;
  presenceHumanId: string | null;
  presenceRefHash: Buffer | null;
  presenceSince: Date;
  refHash: Buffer | null;
  refSealed: Buffer | null;
  svcUserId: string | null;
  mode: string;
  sdkType: string;
  notarizeOffered: boolean;
  returnUrl: string | null;
  metadata: JsonObject | null;
  pushedToDevices: number;
  now: Date;
  expiresAt: Date;
  passExpiresAt: Date;
  /** SHA-256 of the gateway's scoped Idempotency-Key hash, and the flow secret sealed for a retry; null without a key. */
  idempotencyTokenHash: Buffer | null;
  flowSecretSealed: Buffer | null;
  /**
   * The sandbox human's answer, recorded with the request so that it survives the process: how they
   * answer, and from when the sandbox sweep may answer for them (`src/ceremony/sandbox.ts`). Absent
   * for everyone else.
   */
  sandbox?: { verdict: "confirm" | "decline"; answerAt: Date };
  /** The creating call's trace context: the person's later answer and the expiry continue its trace. */
  traceContext: StoredTraceContext;
  /** The push trigger of the person it names, written only when the request is pending; null for no person. */
  pushTrigger: OutboxRow | null;
}

type WriteOutcome = "pending" | "pass" | "unauthenticated" | "no_active_gate" | "gate_not_allowed" | "conflict";

/** A request's outcome, with its push trigger's outbox row when the write made one. */
export interface Written {
  outcome: WriteOutcome;
  pushEvent: CommittedEvent | null;
}

/** Requests written by one statement at most; a larger burst waits for the next one. */
const maxBatch = 64;

const statement = {
  name: "create_verification_requests",
  text: `select ordinal, outcome, push_event_id from create_verification_requests($1::jsonb, $2::bigint[], $3::text[], $4::text[])`,
};

const failure = (message: string): never => {
  throw new Error(message);
};

const bytea = (value: Buffer | null) => (value === null ? null : `\\x${value.toString("hex")}`);

/** The advisory lock that serializes 409 checks of one user on one gate, across every replica; null when the request is not checked. */
function blockingLockKey(request: NewRequest): string | null {
  if (request.blockingHash === null || request.gate === undefined) return null;
  const name = `${request.organizationId}:${request.environment}:${request.gate.key}:${request.blockingHash.toString("base64")}`;
  return createHash("sha256").update(name).digest().readBigInt64BE(0).toString();
}

interface Queued {
  request: NewRequest;
  lockKey: string | null;
}

/**
 * Writes new verification requests, many per statement under load ({@link NaturalBatcher}): one
 * statement decides and writes a whole batch, each request on its own, so the round trip, the plan
 * and the commit are paid once per batch instead of once per call. Requests of one session, one
 * blocking user or one parent never share a batch, which is what lets the statement decide its items
 * side by side. A batch that fails is all rolled back and its requests are written again one by one,
 * so one request's failure is never another's.
 */
export class RequestWriter {
  readonly #batcher: NaturalBatcher<Queued, Written>;

  constructor(db: Pick<pg.Pool, "query">) {
    this.#batcher = new NaturalBatcher({
      maxBatch,
      retryAlone: true,
      gatherTurn: true,
      keys: ({ request, lockKey }) => [
        `session:${request.sessionId}`,
        ...(lockKey === null ? [] : [`user:${lockKey}`]),
        ...(request.parentRequestId === null ? [] : [`parent:${request.parentRequestId}`]),
      ],
      run: async (batch) => {
        const locks = batch.flatMap(({ lockKey }) => (lockKey === null ? [] : [lockKey]));
        const items = batch.map(({ request }, ordinal) => asItem(request, ordinal));
        const families = batch.flatMap(({ request }) => (request.parentRequestId === null ? [] : [request]));
        const { rows } = await db.query<{ ordinal: number; outcome: WriteOutcome; push_event_id: string | null }>({
          ...statement,
          values: [
            JSON.stringify(items),
            locks,
            families.map((r) => r.requestId),
            families.map((r) => r.parentRequestId),
          ],
        });
        const outcomes = new Map(rows.map((row) => [row.ordinal, row]));
        return batch.map(({ request }, ordinal) => {
          const row =
            outcomes.get(ordinal) ?? failure(`the statement gave no outcome for request ${ordinal} of ${batch.length}`);
          const trigger = request.pushTrigger;
          return {
            outcome: row.outcome,
            pushEvent:
              row.push_event_id === null || trigger === null
                ? null
                : {
                    id: row.push_event_id,
                    subject: trigger.subject,
                    messageId: trigger.messageId,
                    payload: trigger.payload,
                    traceContext: trigger.traceContext,
                  },
          };
        });
      },
    });
  }

  /** Decides and writes one request: `pending` or `pass` when written, else the refusal; nothing is written for a refusal. */
  write(request: NewRequest): Promise<Written> {
    return this.#batcher.submit({ request, lockKey: blockingLockKey(request) });
  }
}

/** A request as one element of the statement's `jsonb_to_recordset`. */
const asItem = (request: NewRequest, ordinal: number) => ({
  ordinal,
  session_id: request.sessionId,
  organization_id: request.organizationId,
  environment: request.environment,
  gate_id: request.gate?.id ?? null,
  gate_key: request.gate?.key ?? null,
  gate_type: request.gate?.type ?? null,
  age_threshold: request.gate?.ageThreshold ?? null,
  gate_allowed: request.gateAllowed,
  request_id: request.requestId,
  flow_secret_hash: bytea(request.flowSecretHash),
  blocking_hash: bytea(request.blockingHash),
  parent_request_id: request.parentRequestId,
  presence_human_id: request.presenceHumanId,
  presence_ref_hash: bytea(request.presenceRefHash),
  presence_since: request.presenceSince,
  ref_hash: bytea(request.refHash),
  ref_sealed: bytea(request.refSealed),
  svc_user_id: request.svcUserId,
  mode: request.mode,
  sdk_type: request.sdkType,
  notarize_offered: request.notarizeOffered,
  return_url: request.returnUrl,
  metadata: request.metadata,
  pushed_to_devices: request.pushedToDevices,
  now: request.now,
  expires_at: request.expiresAt,
  pass_expires_at: request.passExpiresAt,
  idempotency_token_hash: bytea(request.idempotencyTokenHash),
  flow_secret_sealed: bytea(request.flowSecretSealed),
  sandbox_behavior: request.sandbox?.verdict ?? null,
  sandbox_answer_at: request.sandbox?.answerAt ?? null,
  trace_context: request.traceContext,
  push_subject: request.pushTrigger?.subject ?? null,
  push_message_id: request.pushTrigger?.messageId ?? null,
  push_payload: bytea(request.pushTrigger?.payload ?? null),
  push_trace_context: request.pushTrigger?.traceContext ?? null,
});
