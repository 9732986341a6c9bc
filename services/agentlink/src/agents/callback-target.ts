import type { EntityManager } from "@mikro-orm/postgresql";
import { isUuid } from "@svc/platform";
import { Agent } from "./agent.entity.ts";
import { openCallbackSecret } from "./callback-secret.ts";

export interface CallbackTarget {
  organizationId: string;
  url: string;
  /** The opened `whsec_` secret: only the delivery engine asks for it, over the mesh's internal RPC. */
  secret: string;
}

/**
 * Where an agent's callbacks go. None for an agent without a callback URL, a revoked one (it is retired:
 * its resolutions are not pushed to it any more), or an id that is no agent.
 */
export async function callbackTarget(
  em: EntityManager,
  callbackSecretKey: Buffer,
  agentId: string,
): Promise<CallbackTarget | null> {
  if (!isUuid(agentId)) return null;
  const agent = await em.findOne(Agent, { id: agentId });
  if (agent?.status !== "active" || !agent.callbackUrl || !agent.callbackSecretSealed) return null;
  return {
    organizationId: agent.organizationId,
    url: agent.callbackUrl,
    secret: openCallbackSecret(callbackSecretKey, agent.id, Buffer.from(agent.callbackSecretSealed)),
  };
}
