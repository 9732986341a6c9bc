import type { Event } from "@svc/proto/events/v1/events_pb.js";

/** The card an agents_ask resolution resolves, and its agent: whose callback receives the message. */
export interface ResolvedCard {
  agentId: string;
  cardId: string;
}

/**
 * Confirmed, denied and expired resolutions go to the agent's callback; a proposal does not, and a
 * cancelled card has no event. An agent id or card id missing leaves the message for partners only.
 */
export function resolvedCardOf(event: Event): ResolvedCard | null {
  const { payload } = event;
  let resolved: { agentId: string | undefined; cardId: string | undefined };
  switch (payload.case) {
    case "agentsAskResolutionConfirmed":
    case "agentsAskResolutionDenied":
      resolved = { agentId: payload.value.metadata?.agentId, cardId: payload.value.metadata?.cardId };
      break;
    case "agentsAskResolutionExpired":
      resolved = { agentId: payload.value.metadata?.agentId, cardId: payload.value.cardId };
      break;
    default:
      return null;
  }
  return resolved.agentId && resolved.cardId ? { agentId: resolved.agentId, cardId: resolved.cardId } : null;
}
