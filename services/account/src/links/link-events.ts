import { create, type MessageInitShape, toBinary } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { EntityManager } from "@mikro-orm/postgresql";
import {
  type Clock,
  type EnvironmentName,
  type EventBus,
  enqueueEvent,
  environmentProto,
  type OutboxEvent,
  uuid,
} from "@svc/platform";
import { EventSchema } from "@svc/proto/events/v1/events_pb.js";

interface LinkFacts {
  organizationId: string;
  environment: EnvironmentName;
  handle: string;
  surfaceId: string | null;
}

/**
 * account.secured and account.unlinked leave through the outbox in the caller's transaction. The spec
 * deduplicates them by the webhook-id alone, so each gets a fresh uuid as its dedup key. Each returns its
 * outbox row, for the caller to hand to the relay once the transaction committed.
 */
export function enqueueAccountSecured(
  em: EntityManager,
  clock: Clock,
  bus: Pick<EventBus, "subject">,
  link: LinkFacts & { securedAt: Date },
): OutboxEvent {
  return enqueue(em, clock, bus, link, link.securedAt, {
    case: "accountSecured",
    value: {
      handle: link.handle,
      securedAt: timestampFromDate(link.securedAt),
      ...(link.surfaceId !== null && { surfaceId: link.surfaceId }),
    },
  });
}

export function enqueueAccountUnlinked(
  em: EntityManager,
  clock: Clock,
  bus: Pick<EventBus, "subject">,
  link: LinkFacts & { unlinkedAt: Date; by: "human" | "platform"; reason: "human" | "platform" | "credential_changed" },
): OutboxEvent {
  return enqueue(em, clock, bus, link, link.unlinkedAt, {
    case: "accountUnlinked",
    value: {
      handle: link.handle,
      by: link.by,
      unlinkedAt: timestampFromDate(link.unlinkedAt),
      reason: link.reason,
      ...(link.surfaceId !== null && { surfaceId: link.surfaceId }),
    },
  });
}

type AccountPayload = Extract<
  NonNullable<MessageInitShape<typeof EventSchema>["payload"]>,
  { case: "accountSecured" | "accountUnlinked" }
>;

const webhookTypes: Record<AccountPayload["case"], string> = {
  accountSecured: "account.secured",
  accountUnlinked: "account.unlinked",
};

function enqueue(
  em: EntityManager,
  clock: Clock,
  bus: Pick<EventBus, "subject">,
  link: LinkFacts,
  occurredAt: Date,
  payload: AccountPayload,
): OutboxEvent {
  const dedupKey = uuid();
  const event = create(EventSchema, {
    dedupKey,
    organizationId: link.organizationId,
    environment: environmentProto(link.environment),
    occurredAt: timestampFromDate(occurredAt),
    payload,
  });
  return enqueueEvent(
    em,
    clock,
    { type: webhookTypes[payload.case], messageId: dedupKey, payload: toBinary(EventSchema, event) },
    bus,
  );
}
