import { isUuid, publishInboxChanged } from "@svc/platform";
import type { Agent } from "../agents/agent.entity.ts";
import { agentsOf } from "../agents/agents-of.ts";
import { refuse } from "../refusal.ts";
import { Binding } from "./binding.entity.ts";
import type { BindingContext } from "./bindings.ts";

/**
 * The person's inbox notices of agents bound to them (`agent_bound`): each active binding until the person
 * dismisses its notice. The notice's id is the binding's id; an unbound binding's notice is gone with it.
 */
export async function listBindingNotices(
  ctx: BindingContext,
  svcUserId: string,
): Promise<{ noticeId: string; agent: Agent; boundAt: Date }[]> {
  const bindings = await ctx.em.find(
    Binding,
    { svcUserId, unboundAt: null, noticeDismissedAt: null },
    { orderBy: { boundAt: "desc", id: "asc" }, limit: 100 },
  );
  const agents = await agentsOf(ctx.em, bindings);
  return bindings.flatMap((binding) => {
    const agent = agents.find((a) => a.id === binding.agentId);
    return agent ? [{ noticeId: binding.id, agent, boundAt: binding.boundAt }] : [];
  });
}

/** Dismisses the notice; dismissed again it answers when it first was. Another person's or unknown: not_found. */
export async function dismissBindingNotice(ctx: BindingContext, svcUserId: string, noticeId: string): Promise<Date> {
  const binding = isUuid(noticeId) ? await ctx.em.findOne(Binding, { id: noticeId, svcUserId }) : null;
  if (!binding) throw refuse("not_found", `no notice ${noticeId} of this person`);
  if (binding.noticeDismissedAt) return binding.noticeDismissedAt;
  binding.noticeDismissedAt = ctx.clock.now();
  await ctx.em.flush();
  publishInboxChanged(ctx.bus, [svcUserId]);
  return binding.noticeDismissedAt;
}
