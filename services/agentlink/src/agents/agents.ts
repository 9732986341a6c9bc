import type { KeyObject } from "node:crypto";
import { type EntityManager, UniqueConstraintViolationException } from "@mikro-orm/postgresql";
import {
  type Clock,
  type EnvironmentName,
  type EventBus,
  enqueueCredentialChange,
  isUuid,
  keyedHash,
  type Logger,
  type OutboxRelay,
  publishCredentialChange,
  uuid,
} from "@svc/platform";
import { CredentialChange } from "@svc/proto/common/v1/credential_watch_pb.js";
import { refuse } from "../refusal.ts";
import { Agent, AgentKey } from "./agent.entity.ts";
import { agentFields } from "./agent-fields.ts";
import { generateAgentKey } from "./agent-key.ts";
import { generateCallbackSecret, sealCallbackSecret } from "./callback-secret.ts";
import { agentKeysChanged } from "./credential-change.ts";

export interface AgentContext {
  em: EntityManager;
  clock: Clock;
  /** HMAC key of key secrets (AGENTLINK_KEY_PEPPER). */
  keyPepper: KeyObject;
  callbackSecretKey: Buffer;
  /** How long older keys keep working after a rotation (AGENTLINK_KEY_OVERLAP). */
  keyOverlapMs: number;
  /** Where a revoke or a rotation is told to the gateways' caches (credential_watch.proto). */
  bus: Pick<EventBus, "subjectPrefix">;
  outbox: Pick<OutboxRelay, "publishCommitted">;
  logger: Logger;
}

/** What is stored of a key: the keyed hash of its secret, never the secret. */
export const secretHash = (pepper: KeyObject, secret: string): Buffer => keyedHash(pepper, secret);

function addKey(ctx: AgentContext, em: EntityManager, agent: Agent): string {
  const { key, secret } = generateAgentKey(agent.name);
  em.create(AgentKey, {
    id: uuid(),
    agentId: agent.id,
    secretHash: secretHash(ctx.keyPepper, secret),
    createdAt: ctx.clock.now(),
    expiresAt: null,
  });
  return key;
}

export async function registerAgent(
  ctx: AgentContext,
  input: {
    organizationId: string;
    environment: EnvironmentName | undefined;
    name: string;
    displayName?: string;
    avatarAsset?: string;
    categories: readonly string[];
    callbackUrl?: string;
  },
): Promise<{ agent: Agent; agentKey: string; callbackSecret: string | undefined }> {
  if (input.organizationId.trim() === "") throw refuse("invalid_argument", "organization id is required");
  if (!input.environment) throw refuse("invalid_argument", "environment is required (development or production)");
  const fields = agentFields(input);
  const id = uuid();
  const callbackSecret = fields.callbackUrl === null ? undefined : generateCallbackSecret();
  const environment = input.environment;
  try {
    // The agent's row first: the ORM knows no relation between the two tables to order the inserts by.
    return await ctx.em.transactional(async (em) => {
      const agent = em.create(Agent, {
        id,
        organizationId: input.organizationId,
        environment,
        ...fields,
        callbackSecretSealed:
          callbackSecret === undefined ? null : sealCallbackSecret(ctx.callbackSecretKey, id, callbackSecret),
        status: "active",
        createdAt: ctx.clock.now(),
        revokedAt: null,
      });
      await em.flush();
      return { agent, agentKey: addKey(ctx, em, agent), callbackSecret };
    });
  } catch (error) {
    if (error instanceof UniqueConstraintViolationException)
      throw refuse(
        "already_exists",
        `organization ${input.organizationId} already has an agent named ${fields.name} in ${input.environment}`,
      );
    throw error;
  }
}

export const listAgents = (em: EntityManager, organizationId: string): Promise<Agent[]> =>
  em.find(Agent, { organizationId }, { orderBy: { createdAt: "asc", name: "asc", id: "asc" } });

async function findAgent(em: EntityManager, agentId: string): Promise<Agent> {
  const agent = isUuid(agentId) ? await em.findOne(Agent, { id: agentId }) : null;
  if (!agent) throw refuse("not_found", `no agent ${agentId}`);
  return agent;
}

/**
 * Every key of a revoked agent is refused as `revoked_agent`; revoking twice keeps the first instant.
 * The gateways forget their cached answers for its keys before this answers.
 */
export async function revokeAgent(ctx: AgentContext, agentId: string): Promise<Agent> {
  const agent = await findAgent(ctx.em, agentId);
  if (agent.status === "active") {
    agent.status = "revoked";
    agent.revokedAt = ctx.clock.now();
    await changeKeys(ctx, agent.id, CredentialChange.REVOKED);
  }
  return agent;
}

/** Commits the unit of work with the change's outbox row, then tells the gateways at once. */
async function changeKeys(ctx: AgentContext, agentId: string, change: CredentialChange): Promise<void> {
  const message = agentKeysChanged(agentId, change);
  const row = enqueueCredentialChange(ctx.em, ctx.clock, ctx.bus, message);
  await ctx.em.flush();
  await publishCredentialChange(ctx.outbox, row, ctx.logger);
}

/**
 * A new key for the agent. Its older keys that still work keep working for the overlap, so a
 * deployment can switch without a gap; then they are refused as a wrong secret. The gateways forget
 * their cached answers for the agent's keys before this answers.
 */
export async function rotateAgentKey(
  ctx: AgentContext,
  agentId: string,
): Promise<{ agent: Agent; agentKey: string; previousKeysExpireAt: Date }> {
  const agent = await findAgent(ctx.em, agentId);
  if (agent.status === "revoked") throw refuse("failed_precondition", `agent ${agentId} is revoked`);
  const now = ctx.clock.now();
  const previousKeysExpireAt = new Date(now.getTime() + ctx.keyOverlapMs);
  const current = await ctx.em.find(AgentKey, { agentId, $or: [{ expiresAt: null }, { expiresAt: { $gt: now } }] });
  for (const key of current)
    if (!key.expiresAt || key.expiresAt > previousKeysExpireAt) key.expiresAt = previousKeysExpireAt;
  const agentKey = addKey(ctx, ctx.em, agent);
  await changeKeys(ctx, agent.id, CredentialChange.ROTATED);
  return { agent, agentKey, previousKeysExpireAt };
}
