import type { KeyObject } from "node:crypto";
import type { EntityManager } from "@mikro-orm/postgresql";
import { type Clock, constantTimeEqual, type EnvironmentName } from "@svc/platform";
import { Agent, AgentKey } from "./agent.entity.ts";
import { parseAgentKey } from "./agent-key.ts";
import { secretHash } from "./agents.ts";

/** Why a key is refused: the four causes of Authentication rule 4 this service decides, and a malformed key. */
export type AgentKeyRefusal =
  | "wrong_key_form"
  | "unknown_agent_name"
  | "other_environment"
  | "revoked_agent"
  | "wrong_secret";

export type AgentKeyOutcome =
  | { kind: "accepted"; agent: Agent; keyExpiresAt: Date | null }
  | { kind: "refused"; refusal: AgentKeyRefusal };

/**
 * The agent a key stands for. Names are unique per organization and environment only, so every agent
 * of the key's name is a candidate; the secret's keyed hash is compared with each candidate's keys in
 * constant time. A key past its rotation overlap is a wrong secret, like any key no longer issued.
 * `environments` are those the asking gateway serves (all when empty).
 */
export async function authenticateAgentKey(
  ctx: { em: EntityManager; clock: Clock; keyPepper: KeyObject },
  key: string,
  environments: readonly EnvironmentName[],
): Promise<AgentKeyOutcome> {
  const parsed = parseAgentKey(key);
  if (!parsed) return { kind: "refused", refusal: "wrong_key_form" };
  const candidates = await ctx.em.find(Agent, { name: parsed.name });
  if (candidates.length === 0) return { kind: "refused", refusal: "unknown_agent_name" };
  const keys = await ctx.em.find(AgentKey, { agentId: { $in: candidates.map((a) => a.id) } });
  const hash = secretHash(ctx.keyPepper, parsed.secret);
  const now = ctx.clock.now();
  const match = keys.find((k) => constantTimeEqual(hash, Buffer.from(k.secretHash)));
  const agent = match && candidates.find((a) => a.id === match.agentId);
  if (!match || !agent || (match.expiresAt && match.expiresAt <= now))
    return { kind: "refused", refusal: "wrong_secret" };
  if (environments.length > 0 && !environments.includes(agent.environment))
    return { kind: "refused", refusal: "other_environment" };
  if (agent.status === "revoked") return { kind: "refused", refusal: "revoked_agent" };
  return { kind: "accepted", agent, keyExpiresAt: match.expiresAt ?? null };
}
