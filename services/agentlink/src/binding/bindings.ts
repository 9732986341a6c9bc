import type { KeyObject } from "node:crypto";
import type { JsonObject } from "@bufbuild/protobuf";
import { type EntityManager, LockMode, UniqueConstraintViolationException } from "@mikro-orm/postgresql";
import { type Clock, type EventBus, isUuid, publishInboxChanged, uuid } from "@svc/platform";
import { Agent } from "../agents/agent.entity.ts";
import { agentsOf } from "../agents/agents-of.ts";
import { refuse } from "../refusal.ts";
import { screenPersonLabel } from "../trust-layer/person-label.ts";
import type { Violation } from "../trust-layer/violation.ts";
import { Binding, BindSession } from "./binding.entity.ts";
import { generateLinkCode, linkCodeForm, linkCodeLifetimeMs } from "./link-code.ts";
import { opaqueIdFor, opaqueIdLookup } from "./opaque-id.ts";

export interface BindingContext {
  em: EntityManager;
  clock: Clock;
  /** AGENTLINK_OPAQUE_ID_KEY. */
  opaqueIdKey: KeyObject;
  /** Where the person's inbox is woken after a binding of theirs changed. */
  bus: Pick<EventBus, "nc" | "subjectPrefix">;
}

/** A label the trust layer's rules refused is its refusal (422 `trust_layer_rejected`, violations echoed). */
function labelRefusal(screened: { refused: string; violations?: Violation[] }) {
  if (screened.violations === undefined) return refuse("invalid_argument", screened.refused);
  return refuse("invalid_argument", screened.refused, {
    status_code: 422,
    code: "trust_layer_rejected",
    retryable: false,
    next_step: "Fix the violations and start the bind session again; no link code was created.",
    violations: screened.violations as unknown as JsonObject[],
  });
}

export type BindSessionStatus = "pending" | "claimed" | "expired";

/**
 * A new link code of the agent, with the agent's name for the person if it gave one (refused, creating
 * nothing, when the trust layer refuses it); a code already taken (one in 31^8) is drawn again.
 */
export async function startBindSession(
  ctx: BindingContext,
  agentId: string,
  personLabel: string | undefined,
): Promise<BindSession> {
  const screened = personLabel === undefined ? undefined : screenPersonLabel(personLabel);
  if (screened !== undefined && "refused" in screened) throw labelRefusal(screened);
  const createdAt = ctx.clock.now();
  for (let attempt = 0; attempt < 5; attempt++) {
    const session = ctx.em.create(BindSession, {
      linkCode: generateLinkCode(),
      agentId,
      createdAt,
      expiresAt: new Date(createdAt.getTime() + linkCodeLifetimeMs),
      claimedAt: null,
      svcUserId: null,
      personLabel: screened?.label ?? null,
    });
    try {
      await ctx.em.flush();
      return session;
    } catch (error) {
      if (!(error instanceof UniqueConstraintViolationException)) throw error;
      ctx.em.clear();
    }
  }
  throw new Error("no free link code after 5 draws");
}

const statusOf = (session: BindSession, now: Date): BindSessionStatus =>
  session.claimedAt ? "claimed" : session.expiresAt <= now ? "expired" : "pending";

/** A code of the calling agent: its state, and once claimed the person's `opaque_id` and when. */
export async function checkBinding(
  ctx: BindingContext,
  agentId: string,
  linkCode: string,
): Promise<{ status: BindSessionStatus; opaqueId: string | null; boundAt: Date | null; personLabel: string | null }> {
  const session = linkCodeForm.test(linkCode) ? await ctx.em.findOne(BindSession, { linkCode, agentId }) : null;
  if (!session) throw refuse("not_found", "no bind session with that link_code for this agent");
  const status = statusOf(session, ctx.clock.now());
  return {
    status,
    opaqueId: session.svcUserId ? opaqueIdFor(ctx.opaqueIdKey, agentId, session.svcUserId) : null,
    boundAt: session.claimedAt ?? null,
    personLabel: session.personLabel ?? null,
  };
}

/**
 * The person claims a code: the session is used up, and the person is bound to its agent (a person
 * already bound keeps the binding they have, named by this code's label when it has one). Unknown: not_found; used: already_exists; past its ten
 * minutes: expired. A revoked agent's code is unknown. A sandbox human (`sandbox`) binds only to
 * development agents.
 */
export async function claimLinkCode(
  ctx: BindingContext,
  svcUserId: string,
  linkCode: string,
  options: { sandbox?: boolean } = {},
): Promise<{ agent: Agent; boundAt: Date; personLabel: string | null }> {
  const code = linkCode.trim().toUpperCase();
  if (!linkCodeForm.test(code)) throw refuse("not_found", "no such link code");
  const claimed = await ctx.em.transactional(async (em) => {
    const session = await em.findOne(BindSession, { linkCode: code }, { lockMode: LockMode.PESSIMISTIC_WRITE });
    const agent = session && (await em.findOne(Agent, { id: session.agentId, status: "active" }));
    if (!session || !agent) throw refuse("not_found", "no such link code");
    const now = ctx.clock.now();
    const status = statusOf(session, now);
    if (status === "claimed") throw refuse("already_exists", "the link code has been used");
    if (status === "expired") throw refuse("expired", "the link code has expired; ask the agent for a new one");
    if (options.sandbox && agent.environment !== "development")
      throw refuse("failed_precondition", "a sandbox human binds only to development agents");
    const existing = await em.findOne(Binding, { agentId: agent.id, svcUserId, unboundAt: null });
    const boundAt = existing?.boundAt ?? now;
    if (existing && session.personLabel !== null) existing.personLabel = session.personLabel;
    if (!existing)
      em.create(Binding, {
        id: uuid(),
        agentId: agent.id,
        svcUserId,
        opaqueIdLookup: opaqueIdLookup(ctx.opaqueIdKey, opaqueIdFor(ctx.opaqueIdKey, agent.id, svcUserId)),
        boundAt,
        unboundAt: null,
        noticeDismissedAt: null,
        personLabel: session.personLabel ?? null,
      });
    session.claimedAt = now;
    session.svcUserId = svcUserId;
    return { agent, boundAt, personLabel: existing?.personLabel ?? session.personLabel ?? null };
  });
  publishInboxChanged(ctx.bus, [svcUserId]);
  return claimed;
}

/** The person's active bindings with their agents, newest first. */
export async function listBindings(
  ctx: BindingContext,
  svcUserId: string,
): Promise<{ agent: Agent; boundAt: Date; personLabel: string | null }[]> {
  const bindings = await ctx.em.find(
    Binding,
    { svcUserId, unboundAt: null },
    { orderBy: { boundAt: "desc", id: "asc" } },
  );
  const agents = await agentsOf(ctx.em, bindings);
  return bindings.flatMap((binding) => {
    const agent = agents.find((a) => a.id === binding.agentId);
    return agent ? [{ agent, boundAt: binding.boundAt, personLabel: binding.personLabel ?? null }] : [];
  });
}

/** Ends the person's binding to the agent: its `opaque_id` then names nobody to the agent. */
export async function unbind(ctx: BindingContext, svcUserId: string, agentId: string): Promise<Date> {
  const binding = isUuid(agentId) ? await ctx.em.findOne(Binding, { agentId, svcUserId, unboundAt: null }) : null;
  if (!binding) throw refuse("not_found", `no active binding to agent ${agentId}`);
  binding.unboundAt = ctx.clock.now();
  await ctx.em.flush();
  publishInboxChanged(ctx.bus, [svcUserId]);
  return binding.unboundAt;
}

/**
 * The person deleted their account: their bindings (active and ended) and the bind sessions they
 * claimed are deleted, so no agent's opaque_id finds them and check-binding no longer answers for
 * those codes. Their queued cards are left to expire at ttl_at (the agent then learns "no answer in
 * time", which is true: a deleted person can confirm nothing, since confirming needs their passkey).
 * Idempotent: a repeat deletes nothing.
 */
export async function eraseHuman(ctx: Pick<BindingContext, "em">, svcUserId: string): Promise<number> {
  return ctx.em.transactional(async (tx) => {
    await tx.execute(`delete from bind_session where svc_user_id = ?`, [svcUserId]);
    const deleted = await tx.execute(`delete from binding where svc_user_id = ? returning id`, [svcUserId]);
    return deleted.length;
  });
}
