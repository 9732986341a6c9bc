import { create, toBinary } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { environmentProto } from "@svc/platform";
import {
  AgentsAskCardProposedSchema,
  AgentsAskResolutionExpiredSchema,
  AgentsAskResolutionSchema,
  type Event,
  EventSchema,
  ExpiredMetadataSchema,
  ResolutionMetadataSchema,
} from "@svc/proto/events/v1/events_pb.js";
import type { Agent } from "../agents/agent.entity.ts";
import type { AgentNaming } from "../agents/agent-naming.ts";
import type { Card } from "./card.entity.ts";

interface OutboxMessage {
  type: string;
  messageId: string;
  payload: Uint8Array;
}

/** The spec's deduplication key is also the JetStream message id. */
function envelope(
  type: string,
  dedupKey: string,
  agent: AgentNaming,
  occurredAt: Date,
  payload: Event["payload"],
): OutboxMessage {
  const event = create(EventSchema, {
    dedupKey,
    organizationId: agent.organizationId,
    environment: environmentProto(agent.environment),
    occurredAt: timestampFromDate(occurredAt),
    payload,
  });
  return { type, messageId: dedupKey, payload: toBinary(EventSchema, event) };
}

/** Where a card came from when not from the agent's own inquire (the event's optional `source`). */
export type ProposalSource = "console_sandbox";

/**
 * `agents_ask.card.proposed`: a card was accepted and queued for its person. `source` only for a console
 * sandbox proposal; an agent's own inquire has none.
 */
export const cardProposed = (
  agent: AgentNaming,
  card: Pick<Card, "id" | "requestId" | "category" | "summaryTitle" | "ttlAt" | "createdAt">,
  source?: ProposalSource,
): OutboxMessage =>
  envelope("agents_ask.card.proposed", `agents_ask.card.proposed:${card.id}`, agent, card.createdAt, {
    case: "agentsAskCardProposed",
    value: create(AgentsAskCardProposedSchema, {
      requestId: card.requestId,
      cardId: card.id,
      agentId: agent.id,
      agentName: agent.name,
      category: card.category,
      summaryTitle: card.summaryTitle,
      ttlAt: timestampFromDate(card.ttlAt),
      source,
    }),
  });

/** `agents_ask.resolution.expired`: nobody answered the card in time (not a denial; no proof). */
export const resolutionExpired = (agent: Agent, card: Card, sweptAt: Date): OutboxMessage =>
  envelope("agents_ask.resolution.expired", `agents_ask.resolution.expired:${card.id}`, agent, sweptAt, {
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

/**
 * `agents_ask.resolution.confirmed` or `.denied`: the person decided, and the event carries the proof.
 * Its deduplication key is the resolution_id (spec).
 */
export function resolutionDecided(agent: Agent, card: Card): OutboxMessage {
  const { resolutionId, resolutionJwt, ceremonyId, resolvedAt } = card;
  if (!resolutionId || !resolutionJwt || !ceremonyId || !resolvedAt)
    throw new Error(`card ${card.id} has no resolution to announce`);
  const approved = card.verdict === "approve";
  const resolution = create(AgentsAskResolutionSchema, {
    requestId: card.requestId,
    resolutionId,
    outcome: approved ? "confirmed" : "denied",
    proofToken: resolutionJwt,
    metadata: create(ResolutionMetadataSchema, {
      cardId: card.id,
      ceremonyId,
      agentId: agent.id,
      agentName: agent.name,
    }),
  });
  return approved
    ? envelope("agents_ask.resolution.confirmed", resolutionId, agent, resolvedAt, {
        case: "agentsAskResolutionConfirmed",
        value: resolution,
      })
    : envelope("agents_ask.resolution.denied", resolutionId, agent, resolvedAt, {
        case: "agentsAskResolutionDenied",
        value: resolution,
      });
}
