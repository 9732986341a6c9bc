import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { GetVerificationStatusResponse } from "@svc/proto/gate/v1/gate_pb.js";
import { defineRoute, ok } from "../http/route.ts";

/**
 * `GET /verification/status`: the status record, flat under `data`. decisions.md: a secret key or a
 * site key of the creating organization; another organization's id reads `found: false`. A lookup
 * failure is the normal payload with status `error`, not an error.
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
  },
  async handle(input, { caller, services, logger }) {
    let record: GetVerificationStatusResponse;
    try {
      record = await services.gate.getVerificationStatus({ caller, requestId: input.request_id });
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
