import { randomUUID } from "node:crypto";
import { create, type MessageInitShape, toBinary } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { EventBus } from "@svc/platform";
import { Environment } from "@svc/proto/common/v1/caller_pb.js";
import { type Event, EventSchema } from "@svc/proto/events/v1/events_pb.js";
import { typeOfPayloadCase } from "../../src/event-types.ts";

type Payload = MessageInitShape<typeof EventSchema>["payload"];
export const at = (iso: string) => timestampFromDate(new Date(iso));
const hex32 = () => randomUUID().replaceAll("-", "");

/** An envelope as the producing services build it: routing facts beside the spec's payload. */
export function envelope(
  organizationId: string,
  payload: NonNullable<Payload>,
  options: { dedupKey?: string; environment?: Environment } = {},
): Event {
  return create(EventSchema, {
    dedupKey: options.dedupKey ?? `${payload.case}:${randomUUID()}`,
    organizationId,
    environment: options.environment ?? Environment.DEVELOPMENT,
    occurredAt: at("2026-11-22T10:00:00Z"),
    payload,
  });
}

export const typeOf = (event: Event): string => typeOfPayloadCase[event.payload.case!];

export async function publish(bus: EventBus, event: Event, msgId: string = event.dedupKey): Promise<void> {
  await bus.js.publish(bus.subject(typeOf(event)), toBinary(EventSchema, event), { msgID: msgId });
}

/** One realistic event of every type for an organization, keyed as the spec's deduplication table says. */
export function oneOfEachType(organizationId: string): Event[] {
  const requestId = `req_${hex32()}`;
  const failedRequestId = `req_${hex32()}`;
  const cardId = randomUUID();
  const agentRequestId = randomUUID();
  const gateMetadata = { order_id: "A-1001", scope: "checkout", trusted: true };
  return [
    envelope(
      organizationId,
      {
        case: "gateHumanVerified",
        value: {
          eventId: requestId,
          requestId,
          verifiedAt: at("2026-11-22T10:00:01Z"),
          verdict: "pass",
          trusted: true,
          firstTime: true,
          handle: "OP_AbCdEf123456",
          environment: "development",
          product: "census",
          metadata: gateMetadata,
        },
      },
      { dedupKey: `gate.human_verified:${requestId}` },
    ),
    envelope(
      organizationId,
      {
        case: "gateUnavailable",
        value: {
          eventId: failedRequestId,
          requestId: failedRequestId,
          failedAt: at("2026-11-22T10:00:02Z"),
          verdict: "unavailable",
          reason: "user_denied",
          errorMessage: "the person declined",
          environment: "production",
          product: "census",
        },
      },
      { dedupKey: `gate.unavailable:${failedRequestId}`, environment: Environment.PRODUCTION },
    ),
    envelope(
      organizationId,
      { case: "accountSecured", value: { handle: "OP_AbCdEf123456", securedAt: at("2026-11-22T10:00:01Z") } },
      { dedupKey: `account.secured:${randomUUID()}` },
    ),
    envelope(
      organizationId,
      {
        case: "accountUnlinked",
        value: {
          handle: "OP_AbCdEf123456",
          by: "platform",
          unlinkedAt: at("2026-11-22T11:00:00Z"),
          reason: "credential_changed",
          surfaceId: randomUUID(),
        },
      },
      { dedupKey: `account.unlinked:${randomUUID()}` },
    ),
    envelope(
      organizationId,
      {
        case: "agentsAskCardProposed",
        value: {
          requestId: agentRequestId,
          cardId,
          agentId: "agent-1",
          agentName: "Billing Bot",
          category: "payments",
          summaryTitle: "Pay invoice 42",
          ttlAt: at("2026-11-22T10:10:00Z"),
        },
      },
      { dedupKey: `agents_ask.card.proposed:${cardId}` },
    ),
    resolution(organizationId, "agentsAskResolutionConfirmed", agentRequestId, cardId),
    resolution(organizationId, "agentsAskResolutionDenied", randomUUID(), randomUUID()),
    envelope(
      organizationId,
      {
        case: "agentsAskResolutionExpired",
        value: {
          requestId: agentRequestId,
          cardId,
          outcome: "expired",
          metadata: { agentId: "agent-1", agentName: "Billing Bot", summaryTitle: "Pay invoice 42" },
        },
      },
      { dedupKey: `agents_ask.resolution.expired:${cardId}` },
    ),
  ];
}

/** An agents_ask resolution of a card, keyed by its own resolution_id as the spec's deduplication table says. */
export function resolution(
  organizationId: string,
  kind: "agentsAskResolutionConfirmed" | "agentsAskResolutionDenied",
  requestId: string,
  cardId: string,
  agentId = "agent-1",
): Event {
  const resolutionId = randomUUID();
  return envelope(
    organizationId,
    {
      case: kind,
      value: {
        requestId,
        resolutionId,
        outcome: kind === "agentsAskResolutionConfirmed" ? "confirmed" : "denied",
        proofToken: "eyJhbGciOiJFUzI1NiJ9.e30.c2ln",
        metadata: { cardId, ceremonyId: randomUUID(), agentId, agentName: "Billing Bot" },
      },
    },
    { dedupKey: resolutionId },
  );
}

/** A small gate event, for tests about delivery rather than payloads. */
export function gateEvent(organizationId: string): Event {
  const requestId = `req_${hex32()}`;
  return envelope(
    organizationId,
    {
      case: "gateHumanVerified",
      value: {
        eventId: requestId,
        requestId,
        verifiedAt: at("2026-11-22T10:00:01Z"),
        verdict: "pass",
        trusted: false,
        firstTime: false,
        environment: "development",
      },
    },
    { dedupKey: `gate.human_verified:${requestId}` },
  );
}
