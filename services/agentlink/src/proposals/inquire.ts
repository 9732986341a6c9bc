import type { KeyObject } from "node:crypto";
import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import { type Client, Code, ConnectError } from "@connectrpc/connect";
import {
  type Clock,
  type EventBus,
  isUuid,
  type OutboxRelay,
  outboxRow,
  personlessPushTriggerRow,
  publishInboxChanged,
  uuid,
} from "@svc/platform";
import { type AccountService, PushKind } from "@svc/proto/account/v1/account_pb.js";
import type { AgentNames } from "../agents/agent-naming.ts";
import { opaqueIdLookup } from "../binding/opaque-id.ts";
import { sandboxAnswerAt } from "../confirmations/sandbox-answers.ts";
import { AgentlinkRefusal, refuse } from "../refusal.ts";
import type { ClassifierClient } from "../trust-layer/classifier-client.ts";
import { trustLayerError } from "../trust-layer/data-error.ts";
import { overlongFields } from "../trust-layer/proposal-fields.ts";
import { screenProposal } from "../trust-layer/screen.ts";
import type { PersonIdentifier } from "./card.entity.ts";
import { cardProposed, type ProposalSource } from "./card-events.ts";
import type { CardWriter, NewCard, ProposedCard, QuorumProposal } from "./card-writer.ts";
import { checkedQuorum } from "./quorum.ts";

export interface ProposalContext {
  /** The agents' naming facts, which never change (their events carry them). */
  agents: Pick<AgentNames, "of">;
  /** inquire's statement (propose-cards.sql): the facts that can change, and the write. */
  cards: Pick<CardWriter, "propose">;
  clock: Clock;
  /** AGENTLINK_OPAQUE_ID_KEY: finds a binding from an agent's `opaque_id`. */
  opaqueIdKey: KeyObject;
  account: Pick<Client<typeof AccountService>, "getHuman" | "findHumanByEmail">;
  classifier: ClassifierClient | undefined;
  bus: Pick<EventBus, "subject" | "nc" | "subjectPrefix">;
  outbox: Pick<OutboxRelay, "publishCommitted">;
  /** A development deployment honours sandbox humans: its development cards record when the sandbox sweep may answer them. */
  deployment: "development" | "production";
}

export interface InquireInput {
  requestId: string;
  opaqueId?: string;
  svcUserId?: string;
  userEmail?: string;
  /** A quorum card's approvers (their opaque_ids), with `quorum`, instead of one person. */
  approvers?: readonly string[];
  quorum?: { approve: number; deny?: number | undefined };
  ttlSeconds?: number;
  /** `action` and `adaptive_card_payload` as the agent sent them: what the trust layer screens. */
  proposal: JsonObject;
  /** Set only for an operator's console sandbox proposal: its event and audit row say so. */
  source?: ProposalSource;
}

/** The spec's `ttl_seconds`: default 600, 60-86400. */
/** What the person's lock screen shows: nothing of the agent's proposal. */
const pushTitle = "An agent asks for your approval";

const ttlSeconds = { default: 600, min: 60, max: 86_400 } as const;

/**
 * The person as the call names them: by a binding the statement finds, or a svc_user_id account knows
 * (given, or found from a verified e-mail address).
 */
type NamedPerson =
  | { namedBy: "opaque_id"; opaqueIdLookup: string }
  | { namedBy: "svc_user_id" | "user_email"; svcUserId: string }
  | { namedBy: "approvers"; quorum: QuorumProposal };

/** A check decided before its turn: its value, or the refusal it comes to when its turn comes. */
type Settled<T> = { value: T } | { refusal: AgentlinkRefusal };

async function settle<T>(check: () => T | Promise<T>): Promise<Settled<T>> {
  try {
    return { value: await check() };
  } catch (error) {
    if (error instanceof AgentlinkRefusal) return { refusal: error };
    throw error;
  }
}

const taken = <T>(settled: Settled<T>): T => {
  if ("refusal" in settled) throw settled.refusal;
  return settled.value;
};

const notActive = () => refuse("permission_denied", "the agent is not active");

/**
 * `inquire`: a card for one person, queued until they answer, it is cancelled or its `ttl_at` passes.
 * Idempotent on (agent, request_id): a repeat answers the existing card with `replay`, whatever its body
 * (the first body is what the person sees; a changed body needs a new request_id). Checks in order: the
 * proposal's texts within the trust layer's limits (first, as input validation: the gateway answers this
 * refusal as its 400), the agent is active, the replay, the ttl, the category, the person (exactly one
 * identifier, then whom it names), the trust layer; then the card, its audit row and
 * `agents_ask.card.proposed` commit together.
 *
 * One round trip: what needs no database is settled first (the ttl, the person's identifier and a
 * svc_user_id's lookup, the trust layer) and, when none refuses, the call carries its new card; the
 * statement (propose-cards.sql) reads what can change (the agent's status and categories, the binding,
 * the request_id's card) and writes the card only when that allows it. The checks then take their turns
 * in order over both, so the answer is the one checking them one by one gives. What the early settling
 * costs: a replay, or a call refused before the trust layer's turn, has been screened (the classifier
 * asked, when there is one) and its svc_user_id looked up for nothing. A revocation committed before
 * the statement is seen; a card the same request_id got concurrently is answered as a replay.
 */
export async function inquire(
  ctx: ProposalContext,
  agentId: string,
  input: InquireInput,
): Promise<{ card: ProposedCard; replay: boolean; asked?: string[] }> {
  const overlong = overlongFields(input.proposal);
  if (overlong.length > 0)
    throw refuse(
      "invalid_argument",
      overlong.map(({ path, maxLength }) => `${path} must be at most ${maxLength} characters long`).join("; "),
      {
        code: "proposal_field_too_long",
        fields: overlong.map(({ path, maxLength }) => ({ path, max_length: maxLength })),
      },
    );
  const agent = await ctx.agents.of(agentId);
  if (!agent) throw notActive();
  const ttl = await settle(() => checkedTtl(input.ttlSeconds));
  const [person, screened] = await Promise.all([settle(() => personOf(ctx, input)), settle(() => screen(ctx, input))]);

  const category = categoryOf(input.proposal);
  // The gateway lets only uuids through; another caller's other text is refused in the replay's turn.
  const requestId = isUuid(input.requestId) ? input.requestId : null;
  let newCard: NewCard | undefined;
  if (requestId !== null && "value" in ttl && "value" in person && "value" in screened) {
    const now = ctx.clock.now();
    const accepted = screened.value;
    const canonical = JSON.parse(accepted.canonicalCard) as { summary_title: string; category: string };
    const card = {
      id: uuid(),
      agentId,
      requestId,
      summaryTitle: canonical.summary_title,
      category: canonical.category,
      canonicalCard: accepted.canonicalCard,
      cardDigest: accepted.cardDigest,
      status: "queued" as const,
      ttlAt: new Date(now.getTime() + ttl.value * 1000),
      createdAt: now,
      // Approvers are named by their opaque_ids: each decision's `sub` is one.
      namedBy: (person.value.namedBy === "approvers" ? "opaque_id" : person.value.namedBy) satisfies PersonIdentifier,
      warnings: accepted.warnings as unknown as JsonObject[],
      sandboxAnswerAt: sandboxAnswerAt(ctx.deployment, agent.environment, now),
    };
    const detail = {
      ...(accepted.warnings.length > 0 && { warnings: accepted.warnings as unknown as JsonValue[] }),
      ...(input.source && { source: input.source }),
    };
    newCard = {
      card,
      audit: {
        action: "card.proposed",
        actor: `agent:${agentId}`,
        at: now,
        detail: Object.keys(detail).length > 0 ? detail : null,
      },
      event: outboxRow(ctx.clock, cardProposed(agent, card, input.source), ctx.bus),
      push: personlessPushTriggerRow(ctx.clock, ctx.bus, {
        kind: PushKind.AGENT_CARD,
        itemId: card.id,
        title: pushTitle,
        expiresAt: card.ttlAt,
      }),
    };
  }
  const named = "value" in person ? person.value : undefined;
  const facts = await ctx.cards.propose({
    agentId,
    requestId,
    opaqueIdLookup: named?.namedBy === "opaque_id" ? named.opaqueIdLookup : null,
    quorum: named?.namedBy === "approvers" ? named.quorum : null,
    svcUserId: named?.namedBy === "svc_user_id" || named?.namedBy === "user_email" ? named.svcUserId : null,
    category: category ?? null,
    newCard,
  });

  // The checks, in their order.
  if (!facts.agentActive) throw notActive();
  if (requestId === null) throw refuse("invalid_argument", "request_id must be a uuid");
  if (facts.card && !facts.written) return { card: facts.card, replay: true };
  taken(ttl);
  if (!facts.categoryAllowed)
    throw refuse("permission_denied", `category ${JSON.stringify(category)} is not one of the agent's categories`, {
      code: "category_not_allowed",
    });
  const { namedBy } = taken(person);
  if (namedBy === "opaque_id" && facts.person === null)
    throw refuse("not_found", "no active binding of this agent has that opaque_id");
  if (namedBy === "approvers" && facts.missingApprover !== null)
    throw refuse("not_found", `approvers[${facts.missingApprover}] is no active binding of this agent`, {
      code: "approver_not_bound",
    });
  taken(screened);
  if (!facts.written || !facts.card)
    throw new Error(`every check passed, yet card ${newCard?.card.id} was not written`);
  ctx.outbox.publishCommitted(facts.events);
  const asked = facts.approvers ?? [facts.card.svcUserId];
  publishInboxChanged(ctx.bus, asked);
  return { card: facts.card, replay: false, asked };
}

function checkedTtl(requested: number | undefined): number {
  const ttl = requested ?? ttlSeconds.default;
  if (ttl < ttlSeconds.min)
    throw refuse("invalid_argument", `ttl_seconds must be at least ${ttlSeconds.min}`, {
      code: "ttl_below_floor",
      min_ttl_seconds: ttlSeconds.min,
    });
  if (ttl > ttlSeconds.max)
    throw refuse("invalid_argument", `ttl_seconds must be at most ${ttlSeconds.max}`, {
      code: "ttl_above_ceiling",
      max_ttl_seconds: ttlSeconds.max,
    });
  return ttl;
}

/** The category as sent; one that is not a string is the trust layer's to reject. */
function categoryOf(proposal: JsonObject): string | undefined {
  const action = proposal.action;
  if (typeof action !== "object" || action === null || Array.isArray(action)) return undefined;
  return typeof action.category === "string" ? action.category : undefined;
}

/**
 * The person the card is for: exactly one of the three identifiers names them. An opaque_id names
 * whoever the agent's active binding with it is bound to, which the statement finds; a user_email the
 * person whose identity provider vouched for it, who is then treated as if named by svc_user_id.
 */
async function personOf(ctx: ProposalContext, input: InquireInput): Promise<NamedPerson> {
  const approvers = input.approvers !== undefined && input.approvers.length > 0 ? input.approvers : undefined;
  const given = [approvers, input.opaqueId, input.svcUserId, input.userEmail].filter((value) => value !== undefined);
  if (given.length !== 1)
    throw refuse("invalid_argument", "give exactly one of approvers, opaque_id, svc_user_id and user_email");
  if (approvers !== undefined || input.quorum !== undefined) {
    const { approve, deny } = checkedQuorum(approvers ?? [], input.quorum);
    const approverLookups = (approvers ?? []).map((id) => opaqueIdLookup(ctx.opaqueIdKey, id));
    return { namedBy: "approvers", quorum: { approverLookups, approve, deny } };
  }
  if (input.opaqueId !== undefined)
    return { namedBy: "opaque_id", opaqueIdLookup: opaqueIdLookup(ctx.opaqueIdKey, input.opaqueId) };
  if (input.svcUserId !== undefined)
    return { namedBy: "svc_user_id", svcUserId: await knownHuman(ctx, input.svcUserId) };
  return { namedBy: "user_email", svcUserId: await humanWithEmail(ctx, input.userEmail ?? "") };
}

/** The trust layer's verdict on the body: the accepted card, or its refusal (422, or 502 for the classifier). */
async function screen(ctx: ProposalContext, input: InquireInput) {
  const screened = await screenProposal(
    { request_id: input.requestId, ...input.proposal },
    { classifier: ctx.classifier },
  );
  if (screened.kind === "accepted") return screened;
  const { statusCode, message, ...detail } = trustLayerError(screened);
  throw refuse(statusCode === 422 ? "invalid_argument" : "unavailable", message, {
    ...(detail as unknown as JsonObject),
    status_code: statusCode,
  });
}

async function knownHuman(ctx: ProposalContext, svcUserId: string): Promise<string> {
  if (!isUuid(svcUserId)) throw refuse("not_found", "no person has that svc_user_id");
  return lookedUp(() => ctx.account.getHuman({ svcUserId }), "svc_user_id");
}

/** An unknown and an unverified address answer alike: account keeps verified addresses only. */
function humanWithEmail(ctx: ProposalContext, userEmail: string): Promise<string> {
  return lookedUp(() => ctx.account.findHumanByEmail({ email: userEmail }), "user_email");
}

async function lookedUp(lookup: () => Promise<{ svcUserId: string }>, field: string): Promise<string> {
  try {
    return (await lookup()).svcUserId;
  } catch (error) {
    if (error instanceof ConnectError && error.code === Code.NotFound)
      throw refuse("not_found", `no person has that ${field}`);
    throw refuse("unavailable", "the user lookup failed; retry with the same request_id");
  }
}
