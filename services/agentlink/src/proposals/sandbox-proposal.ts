import type { JsonObject } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import type { EntityManager } from "@mikro-orm/postgresql";
import { isUuid, uuid } from "@svc/platform";
import { Environment } from "@svc/proto/common/v1/caller_pb.js";
import { Agent } from "../agents/agent.entity.ts";
import { Binding } from "../binding/binding.entity.ts";
import { opaqueIdFor } from "../binding/opaque-id.ts";
import { refuse } from "../refusal.ts";
import type { ProposedCard } from "./card-writer.ts";
import { inquire, type ProposalContext } from "./inquire.ts";

export interface SandboxProposalInput {
  agentName: string;
  /** Only the agents of this organization; needed only when several organizations' agents of the name are bound to the human. */
  organizationId?: string;
  svcUserId: string;
  ttlSeconds?: number;
  /** `action` and `adaptive_card_payload`, as an agent's inquire sends them. */
  proposal: JsonObject;
}

/**
 * A console sandbox proposal (decisions.md, `svcctl agent propose`): a card proposed as a development
 * agent would, to a sandbox human bound to it, so that a partner can watch a card reach the human and the
 * webhook that follows without writing an agent. It names the human by the agent's `opaque_id` for them
 * and is inquire itself (the same checks, trust layer and statement, a fresh request_id), so the card and
 * its proof are an agent's own; only `source: "console_sandbox"` on its event and audit row tells them apart.
 * Refused in a production deployment, for a human that is not a sandbox human or not bound to the agent,
 * and for an unknown agent or human.
 */
export async function proposeSandboxCard(
  ctx: ProposalContext & { em: EntityManager },
  input: SandboxProposalInput,
): Promise<{ agentId: string; requestId: string; card: ProposedCard }> {
  if (ctx.deployment === "production")
    throw refuse(
      "failed_precondition",
      "console sandbox proposals are development only; this is a production deployment",
    );
  await requireSandboxHuman(ctx, input.svcUserId);
  const agentId = await boundAgent(ctx.em, input);
  const requestId = uuid();
  const { card } = await inquire(ctx, agentId, {
    requestId,
    opaqueId: opaqueIdFor(ctx.opaqueIdKey, agentId, input.svcUserId),
    ttlSeconds: input.ttlSeconds,
    proposal: input.proposal,
    source: "console_sandbox",
  });
  return { agentId, requestId, card };
}

async function requireSandboxHuman(ctx: Pick<ProposalContext, "account">, svcUserId: string): Promise<void> {
  const unknown = () => refuse("not_found", `no human has svc_user_id ${JSON.stringify(svcUserId)}`);
  if (!isUuid(svcUserId)) throw unknown();
  let sandboxEnvironment: Environment;
  try {
    ({ sandboxEnvironment } = await ctx.account.getHuman({ svcUserId }));
  } catch (error) {
    if (error instanceof ConnectError && error.code === Code.NotFound) throw unknown();
    throw refuse("unavailable", "the human lookup failed; retry");
  }
  if (sandboxEnvironment !== Environment.DEVELOPMENT)
    throw refuse("failed_precondition", `human ${svcUserId} is not a sandbox human`);
}

/** The development agent of that name the human is actively bound to. */
async function boundAgent(em: EntityManager, input: SandboxProposalInput): Promise<string> {
  const named = await em.find(Agent, {
    environment: "development",
    name: input.agentName,
    ...(input.organizationId !== undefined && { organizationId: input.organizationId }),
  });
  const where = input.organizationId === undefined ? "" : ` in organization ${input.organizationId}`;
  if (named.length === 0)
    throw refuse("not_found", `no development agent is named ${JSON.stringify(input.agentName)}${where}`);
  const bindings = await em.find(Binding, {
    agentId: { $in: named.map((agent) => agent.id) },
    svcUserId: input.svcUserId,
    unboundAt: null,
  });
  const bound = [...new Set(bindings.map((binding) => binding.agentId))];
  if (bound.length === 0)
    throw refuse(
      "failed_precondition",
      `sandbox human ${input.svcUserId} is not bound to agent ${JSON.stringify(input.agentName)}${where}: claim one of its link codes first (svcctl human claim)`,
    );
  if (bound.length > 1)
    throw refuse(
      "failed_precondition",
      `agents named ${JSON.stringify(input.agentName)} of ${bound.length} organizations are bound to this human: name the organization`,
    );
  return bound[0] as string;
}
