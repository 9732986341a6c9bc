import { create, type JsonObject, toBinary } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { type EnvironmentName, environmentProto } from "@svc/platform";
import {
  type Event,
  EventSchema,
  GateHumanVerifiedSchema,
  GateUnavailableSchema,
} from "@svc/proto/events/v1/events_pb.js";

/**
 * The two gate events (spec "Events"): `gate.human_verified` and `gate.unavailable` in its failure
 * and expiry shapes, as `svc.events.v1.Event` envelopes ready for the outbox. The deduplication key is
 * type + request_id, so each request yields at most one event of each type, and the request state
 * machine makes sure it yields at most one terminal event at all.
 */

/**
 * The metadata a gate event carries: the partner's create-session keys, overridden by its
 * create-verification-link keys; undefined (omitted) when there are none. Reserved keys are dropped
 * where webhooks are rendered (webhook-dispatch), the one place that rule lives.
 */
export function eventMetadata(
  session: JsonObject | null | undefined,
  link: JsonObject | null | undefined,
): JsonObject | undefined {
  const merged: JsonObject = {};
  for (const [key, value] of Object.entries({ ...session, ...link })) {
    if (value !== undefined) merged[key] = value;
  }
  return Object.keys(merged).length > 0 ? merged : undefined;
}

export interface GateEventSubject {
  requestId: string;
  organizationId: string;
  environment: EnvironmentName;
  metadata: JsonObject | null;
}

export interface OutboxMessage {
  type: string;
  messageId: string;
  payload: Uint8Array;
}

/** Every request of ours names a gate, so every gate event is a `census` product event. */
const product = "census";

function envelope(type: string, subject: GateEventSubject, occurredAt: Date, payload: Event["payload"]): OutboxMessage {
  const dedupKey = `${type}:${subject.requestId}`;
  const event = create(EventSchema, {
    dedupKey,
    organizationId: subject.organizationId,
    environment: environmentProto(subject.environment),
    occurredAt: timestampFromDate(occurredAt),
    payload,
  });
  return { type, messageId: dedupKey, payload: toBinary(EventSchema, event) };
}

const shared = (subject: GateEventSubject) => ({
  eventId: subject.requestId,
  requestId: subject.requestId,
  environment: subject.environment,
  product,
  ...(subject.metadata ? { metadata: subject.metadata } : {}),
});

export function humanVerified(
  subject: GateEventSubject,
  outcome: { verifiedAt: Date; trusted: boolean; firstTime: boolean; handle?: string },
): OutboxMessage {
  return envelope("gate.human_verified", subject, outcome.verifiedAt, {
    case: "gateHumanVerified",
    value: create(GateHumanVerifiedSchema, {
      ...shared(subject),
      verifiedAt: timestampFromDate(outcome.verifiedAt),
      verdict: "pass",
      trusted: outcome.trusted,
      firstTime: outcome.firstTime,
      ...(outcome.trusted && outcome.handle ? { handle: outcome.handle } : {}),
    }),
  });
}

/** The spec's failure reasons; anything else reads as internal_error. */
export type FailureReason = "user_denied" | "device_lock_required" | "platform_declined" | "internal_error";

export interface LinkRefusal {
  failureCode: "already_trusted" | "rebind_requires_prior_id";
  failureName: "account_already_secured_here" | "account_held_by_another_id";
}

export function unavailableFailed(
  subject: GateEventSubject,
  failure: { failedAt: Date; reason: FailureReason; errorMessage: string; refusal?: LinkRefusal },
): OutboxMessage {
  return envelope("gate.unavailable", subject, failure.failedAt, {
    case: "gateUnavailable",
    value: create(GateUnavailableSchema, {
      ...shared(subject),
      failedAt: timestampFromDate(failure.failedAt),
      verdict: "unavailable",
      reason: failure.reason,
      errorMessage: failure.errorMessage,
      ...(failure.refusal
        ? { failureCode: failure.refusal.failureCode, failureName: failure.refusal.failureName }
        : {}),
    }),
  });
}

/** The expiry shape: `expired_at`, no reason, no error message. */
export function unavailableExpired(subject: GateEventSubject, expiredAt: Date, occurredAt: Date): OutboxMessage {
  return envelope("gate.unavailable", subject, occurredAt, {
    case: "gateUnavailable",
    value: create(GateUnavailableSchema, {
      ...shared(subject),
      expiredAt: timestampFromDate(expiredAt),
      verdict: "unavailable",
    }),
  });
}
