import type { JsonObject } from "@bufbuild/protobuf";
import { type Timestamp, timestampDate } from "@bufbuild/protobuf/wkt";
import { type EnvironmentName, environmentName } from "@svc/platform";
import type { Environment } from "@svc/proto/common/v1/caller_pb.js";
import type { Event } from "@svc/proto/events/v1/events_pb.js";
import { typeOfPayloadCase, type WebhookType } from "../event-types.ts";

/**
 * Turns an event envelope into the exact webhook body the spec describes for its type: `type` first,
 * then the spec's fields in the spec's order, ISO 8601 timestamps, `null` where the spec says
 * nullable, optional fields left out when absent. The bytes returned here are the bytes signed and sent.
 */
export type Rendering =
  | { kind: "rendered"; type: WebhookType; body: Buffer }
  /** A payload case this build does not know: a newer producer; a newer dispatcher will render it. */
  | { kind: "unknown_type" }
  /** The event breaks the contract (a required field missing, both gate.unavailable shapes at once). */
  | { kind: "invalid"; reason: string };

/** Keys the service itself sets in request metadata; the spec drops them from partner metadata. */
export const reservedMetadataKeys: ReadonlySet<string> = new Set([
  "auth_mode",
  "auth_source",
  "consumer_api_token_id",
  "link_on_verify",
  "webhook_url",
  "return_url",
  "environment",
  "sdk_type",
  "scope",
  "scope_id",
  "parent_request_id",
  "gate_type",
  "age_threshold",
  "age_verdict",
  "age_source",
  "account_classes",
  "notarize",
  "notarize_fallback_reason",
  "trusted",
  "first_time",
  "failure_code",
]);

class InvalidEvent extends Error {}

export function renderPayload(event: Event): Rendering {
  if (event.payload.case === undefined) return { kind: "unknown_type" };
  try {
    const payload = payloadFields(event);
    return { kind: "rendered", type: payload.type, body: Buffer.from(JSON.stringify(payload)) };
  } catch (error) {
    if (error instanceof InvalidEvent) return { kind: "invalid", reason: error.message };
    throw error;
  }
}

type Payload = { type: WebhookType } & Record<string, unknown>;

function payloadFields(event: Event): Payload {
  const { payload } = event;
  switch (payload.case) {
    case "gateHumanVerified": {
      const p = payload.value;
      return {
        type: typeOfPayloadCase.gateHumanVerified,
        event_id: required(p.eventId, "event_id"),
        request_id: required(p.requestId, "request_id"),
        verified_at: isoTime(p.verifiedAt, "verified_at"),
        verdict: p.verdict || "pass",
        trusted: p.trusted,
        first_time: p.firstTime,
        // The spec: present only when trusted is true.
        ...(p.trusted && p.handle ? { handle: p.handle } : {}),
        ...gateSharedFields(event, p),
      };
    }
    case "gateUnavailable": {
      const p = payload.value;
      const common = { event_id: required(p.eventId, "event_id"), request_id: required(p.requestId, "request_id") };
      if (p.failedAt && p.expiredAt) throw new InvalidEvent("gate.unavailable carries both failed_at and expired_at");
      if (p.expiredAt) {
        return {
          type: typeOfPayloadCase.gateUnavailable,
          ...common,
          expired_at: isoTime(p.expiredAt, "expired_at"),
          verdict: p.verdict || "unavailable",
          ...gateSharedFields(event, p),
        };
      }
      return {
        type: typeOfPayloadCase.gateUnavailable,
        ...common,
        failed_at: isoTime(p.failedAt, "failed_at or expired_at"),
        verdict: p.verdict || "unavailable",
        // The spec's default: an unknown or missing reason is internal_error.
        reason: p.reason || "internal_error",
        ...optional("error_message", p.errorMessage),
        ...optional("failure_code", p.failureCode),
        ...optional("failure_name", p.failureName),
        ...gateSharedFields(event, p),
      };
    }
    case "accountSecured": {
      const p = payload.value;
      return {
        type: typeOfPayloadCase.accountSecured,
        handle: required(p.handle, "handle"),
        secured_at: isoTime(p.securedAt, "secured_at"),
        surface_id: p.surfaceId || null,
      };
    }
    case "accountUnlinked": {
      const p = payload.value;
      return {
        type: typeOfPayloadCase.accountUnlinked,
        handle: required(p.handle, "handle"),
        by: required(p.by, "by"),
        unlinked_at: isoTime(p.unlinkedAt, "unlinked_at"),
        reason: required(p.reason, "reason"),
        surface_id: p.surfaceId || null,
      };
    }
    case "agentsAskCardProposed": {
      const p = payload.value;
      return {
        type: typeOfPayloadCase.agentsAskCardProposed,
        request_id: required(p.requestId, "request_id"),
        card_id: required(p.cardId, "card_id"),
        agent_id: required(p.agentId, "agent_id"),
        agent_name: p.agentName,
        category: p.category,
        summary_title: p.summaryTitle,
        ttl_at: isoTime(p.ttlAt, "ttl_at"),
        ...optional("source", p.source),
      };
    }
    case "agentsAskResolutionConfirmed":
    case "agentsAskResolutionDenied": {
      const p = payload.value;
      // The type decides the outcome; a producer that says otherwise has a bug worth stopping.
      const outcome = payload.case === "agentsAskResolutionConfirmed" ? "confirmed" : "denied";
      if (p.outcome && p.outcome !== outcome)
        throw new InvalidEvent(`outcome "${p.outcome}" contradicts type ${typeOfPayloadCase[payload.case]}`);
      if (!p.metadata) throw new InvalidEvent("metadata is missing");
      return {
        type: typeOfPayloadCase[payload.case],
        request_id: required(p.requestId, "request_id"),
        resolution_id: required(p.resolutionId, "resolution_id"),
        outcome,
        proof_token: required(p.proofToken, "proof_token"),
        metadata: {
          card_id: p.metadata.cardId,
          ceremony_id: p.metadata.ceremonyId,
          agent_id: p.metadata.agentId,
          agent_name: p.metadata.agentName,
        },
      };
    }
    case "agentsAskResolutionExpired": {
      const p = payload.value;
      if (!p.metadata) throw new InvalidEvent("metadata is missing");
      return {
        type: typeOfPayloadCase.agentsAskResolutionExpired,
        request_id: required(p.requestId, "request_id"),
        card_id: required(p.cardId, "card_id"),
        outcome: "expired",
        metadata: {
          agent_id: p.metadata.agentId,
          agent_name: p.metadata.agentName,
          summary_title: p.metadata.summaryTitle,
        },
      };
    }
    default:
      throw new InvalidEvent(`no rendering for payload case ${String((payload as { case: unknown }).case)}`);
  }
}

/** `environment`, `product` and the partner's own `metadata`, which every gate event carries. */
function gateSharedFields(event: Event, p: { environment: string; product?: string; metadata?: JsonObject }) {
  const metadata = partnerMetadata(p.metadata);
  return {
    environment: gateEnvironment(p.environment, event.environment),
    ...optional("product", p.product),
    ...(metadata ? { metadata } : {}),
  };
}

function partnerMetadata(metadata: JsonObject | undefined): JsonObject | undefined {
  if (!metadata) return undefined;
  const kept = Object.entries(metadata).filter(([key]) => !reservedMetadataKeys.has(key));
  return kept.length > 0 ? Object.fromEntries(kept) : undefined;
}

/** The payload's own value, else the envelope's. */
function gateEnvironment(fromPayload: string, fromEnvelope: Environment): EnvironmentName {
  if (fromPayload === "development" || fromPayload === "production") return fromPayload;
  if (fromPayload) throw new InvalidEvent(`environment "${fromPayload}" is neither development nor production`);
  const name = environmentName(fromEnvelope);
  if (!name) throw new InvalidEvent("environment is missing");
  return name;
}

function required(value: string, field: string): string {
  if (!value) throw new InvalidEvent(`${field} is missing`);
  return value;
}

function optional(field: string, value: string | undefined): Record<string, string> {
  return value ? { [field]: value } : {};
}

function isoTime(value: Timestamp | undefined, field: string): string {
  if (!value) throw new InvalidEvent(`${field} is missing`);
  return timestampDate(value).toISOString();
}
