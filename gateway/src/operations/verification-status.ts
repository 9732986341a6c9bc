import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { GetVerificationStatusResponse } from "@svc/proto/gate/v1/gate_pb.js";
import { ok } from "../http/route.ts";
import { defineRoute } from "../services.ts";

/**
 * `GET /verification/status`: the status record, flat under `data`. decisions.md: a secret key or a
 * site key of the creating organization; another organization's id reads `found: false`. A lookup
 * failure is the normal payload with status `error`, not an error. With `wait_seconds` (beyond the
 * spec) and the request pending, a long-poll: held in this gateway (`Waiters`, by request id) until gate
 * notifies that the request changed (`request_watch.proto`), or until `wait_seconds` is up or the
 * request's window ends, when the record is read again. Nothing polls gate meanwhile.
 */
export const verificationStatusRoute = defineRoute({
  operationId: "getVerificationStatus",
  method: "GET",
  path: "/verification/status",
  summary: "Read a verification request's status record, with the attestation token while it is valid.",
  auth: { accepts: ["secret_key", "site_key"] },
  input: {
    type: "object",
    properties: {
      request_id: { type: "string", minLength: 1, maxLength: 64, description: "req_ followed by 32 hex characters." },
      wait_seconds: {
        type: "integer",
        minimum: 0,
        maximum: 25,
        description:
          "Beyond the spec. Default 0 (answer at once). Else a long-poll: a pending request is answered as soon as its status changes, else when wait_seconds is up or its window ends, with its status then (normally pending).",
      },
    },
    required: ["request_id"],
  },
  envelope: "flat",
  output: {
    type: "object",
    properties: {
      found: { type: "boolean" },
      status: { type: "string", enum: ["pending", "completed", "pass", "expired", "failed", "not_found", "error"] },
      message: { type: "string" },
      trusted: { type: "boolean" },
      first_time: { type: "boolean" },
      reason: { type: "string", enum: ["already_trusted", "rebind_requires_prior_id", "unavailable"] },
      age_verdict: { type: "string", enum: ["over", "under", "unavailable"] },
      expires_at: { type: "string", format: "date-time" },
      token: { type: "string", nullable: true },
    },
    // Every record has these, and a `data.error` answer has none of them: the two answers cannot be confused.
    required: ["found", "status", "message"],
  },
  async handle(input, { caller, services, clock, logger, signal }) {
    const read = () => services.gate.getVerificationStatus({ caller, requestId: input.request_id });
    const waitMs = (input.wait_seconds ?? 0) * 1000;
    let record: GetVerificationStatusResponse;
    try {
      record =
        waitMs === 0
          ? await read()
          : await services.requestWaiters.hold(
              input.request_id,
              read,
              (first) => holdMs(first, waitMs, clock.now()),
              signal,
            );
    } catch (error) {
      logger.warn("status lookup failed", { error });
      return ok({ found: false, status: "error", message: "the status could not be read; retry" });
    }
    return ok({
      found: record.found,
      status: record.status,
      message: record.message,
      ...(record.trusted !== undefined ? { trusted: record.trusted } : {}),
      ...(record.firstTime !== undefined ? { first_time: record.firstTime } : {}),
      ...(record.reason !== undefined ? { reason: record.reason } : {}),
      ...(record.ageVerdict !== undefined ? { age_verdict: record.ageVerdict } : {}),
      ...(record.expiresAt ? { expires_at: timestampDate(record.expiresAt).toISOString() } : {}),
      // decisions.md: a Recent Presence pass reports `token: null`.
      ...(record.token !== undefined ? { token: record.token } : record.status === "pass" ? { token: null } : {}),
    });
  },
});

/**
 * How long a pending request's answer waits: `waitMs`, cut at the end of its window. Past its window a
 * request still reads pending only while a confirmation holds it, and that confirmation ends with a
 * notification, so the wait takes its whole time then.
 */
function holdMs(first: GetVerificationStatusResponse, waitMs: number, now: Date): number {
  if (first.status !== "pending") return 0;
  const left = first.expiresAt ? timestampDate(first.expiresAt).getTime() - now.getTime() : waitMs;
  return left > 0 ? Math.min(waitMs, left) : waitMs;
}
