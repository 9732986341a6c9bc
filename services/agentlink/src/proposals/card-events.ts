import { create, toBinary } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { environmentProto } from "@svc/platform";
import {
  AgentsAskCardProposedSchema,
  AgentsAskResolutionExpiredSchema,
  type Event,
  EventSchema,
  ExpiredMetadataSchema,
} from "@svc/proto/events/v1/events_pb.js";
import type { Agent } from "../agents/agent.entity.ts";
import type { Card } from "./card.entity.ts";

interface OutboxMessage {
  type: string;
  messageId: string;
  payload: Uint8Array;
}

/** The spec's deduplication key of the card events: type + card_id, also the JetStream message id. */
function envelope(type: string, agent: Agent, card: Card, occurredAt: Date, payload: Event["payload"]): OutboxMessage {
  const dedupKey = `${type}:${card.id}`;
  const event = create(EventSchema, {
    dedupKey,
    organizationId: agent.organizationId,
    environment: environmentProto(agent.environment),
    occurredAt: timestampFromDate(occurredAt),
    payload,
  });
  return { type, messageId: dedupKey, payload: toBinary(EventSchema, event) };
}

/** `agents_ask.card.proposed`: a card was accepted and queued for its person. */
export const cardProposed = (agent: Agent, card: Card): OutboxMessage =>
  envelope("agents_ask.card.proposed", agent, card, card.createdAt, {
    case: "agentsAskCardProposed",
    value: create(AgentsAskCardProposedSchema, {
      requestId: card.requestId,
      cardId: card.id,
      agentId: agent.id,
      agentName: agent.name,
      category: card.category,
      summaryTitle: card.summaryTitle,
      ttlAt: timestampFromDate(card.ttlAt),
    }),
  });

/** `agents_ask.resolution.expired`: nobody answered the card in time (not a denial; no proof). */
export const resolutionExpired = (agent: Agent, card: Card, sweptAt: Date): OutboxMessage =>
  envelope("agents_ask.resolution.expired", agent, card, sweptAt, {
    case: "agentsAskResolutionExpired",
    value: create(AgentsAskResolutionExpiredSchema, {
      requestId: card.requestId,
      cardId: card.id,
      outcome: "expired",
      metadata: create(ExpiredMetadataSchema, {
        agentId: agent.id,
        agentName: agent.name,
        summaryTitle: card.summaryTitle,
      }),
    }),
  });
