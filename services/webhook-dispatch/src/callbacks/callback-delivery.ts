import type { Queryable } from "@svc/platform";
import { callbackEndpointId } from "./callback-endpoints.ts";

export interface CallbackDeliveryState {
  /** A 2xx reached the agent. */
  delivered: boolean;
  /** Every attempt made, the one in flight included. */
  attempts: number;
}

/**
 * The callback of an agent's resolved card (a card resolves once, so there is at most one). None (the
 * card is not resolved, the agent has no callback, its event is not here yet, another agent's card):
 * not delivered, no attempts.
 */
export async function callbackDelivery(db: Queryable, agentId: string, cardId: string): Promise<CallbackDeliveryState> {
  const { rows } = await db.query<{ status: string; attempts: number }>({
    name: "callback_delivery",
    text: `select d.status, d.attempts from messages m join deliveries d on d.message_id = m.id
     where m.card_id = $1 and m.agent_id = $2 and d.endpoint_id = $3`,
    values: [cardId, agentId, callbackEndpointId(agentId)],
  });
  const row = rows[0];
  return { delivered: row?.status === "delivered", attempts: row?.attempts ?? 0 };
}
