import type { KeyObject } from "node:crypto";
import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import { type Client, Code, ConnectError } from "@connectrpc/connect";
import { type Clock, type EventBus, type OutboxRelay, outboxRow, type Queryable, uuid } from "@svc/platform";
import type { AccountService } from "@svc/proto/account/v1/account_pb.js";
import { opaqueIdLookup } from "../binding/opaque-id.ts";
import { refuse } from "../refusal.ts";
import type { ClassifierClient } from "../trust-layer/classifier-client.ts";
import { trustLayerError } from "../trust-layer/data-error.ts";
import { screenProposal } from "../trust-layer/screen.ts";
import type { PersonIdentifier } from "./card.entity.ts";
import { cardProposed } from "./card-events.ts";
import type { CardWriter } from "./card-writer.ts";
import { inquiryFacts, type ProposedCard } from "./inquiry-facts.ts";

export interface ProposalContext {
  /** The statement pool: inquire's read. */
  statements: Queryable;
  /** inquire's write: the card, its audit row and its event (propose-cards.sql). */
  cards: Pick<CardWriter, "write">;
  clock: Clock;
  /** AGENTLINK_OPAQUE_ID_KEY: finds a binding from an agent's `opaque_id`. */
  opaqueIdKey: KeyObject;
  account: Pick<Client<typeof AccountService>, "getHuman">;
  classifier: ClassifierClient | undefined;
  bus: Pick<EventBus, "subject">;
  outbox: Pick<OutboxRelay, "wake">;
}

export interface InquireInput {
  requestId: string;
  opaqueId?: string;
  svcUserId?: string;
  userEmail?: string;
  ttlSeconds?: number;
  /** `action` and `adaptive_card_payload` as the agent sent them: what the trust layer screens. */
  proposal: JsonObject;
}

/** The spec's `ttl_seconds`: default 600, 60-86400. */
const ttlSeconds = { default: 600, min: 60, max: 86_400 } as const;

/**
 * `inquire`: a card for one person, queued until they answer, it is cancelled or its `ttl_at` passes.
 * Idempotent on (agent, request_id): a repeat answers the existing card with `replay`, whatever its body
 * (the first body is what the person sees; a changed body needs a new request_id). Checks in order: the
 * agent is active, the replay, the ttl, the category, the person (exactly one identifier, then whom it
 * names), the trust layer; then the card, its audit row and `agents_ask.card.proposed` commit together.
 *
 * Two round trips: one read gives the agent, the card of this request_id and the binding of the
 * `opaque_id` (looked up whenever one is given, used only once the identifier rule passes); the writer
 * then stores the card, or answers the card a concurrent first call committed meanwhile (a replay).
 * Like the read, a revocation is seen by the next inquire, not one already past its read.
 */
export async function inquire(
  ctx: ProposalContext,
  agentId: string,
  input: InquireInput,
): Promise<{ card: ProposedCard; replay: boolean }> {
  const lookup = input.opaqueId === undefined ? undefined : opaqueIdLookup(ctx.opaqueIdKey, input.opaqueId);
  const { agent, existing, boundPerson } = await inquiryFacts(ctx.statements, agentId, input.requestId, lookup);
  if (agent?.status !== "active") throw refuse("permission_denied", "the agent is not active");
  if (existing) return { card: existing, replay: true };

  const ttl = checkedTtl(input.ttlSeconds);
  const category = categoryOf(input.proposal);
  if (category !== undefined && !agent.categories.includes(category))
    throw refuse("permission_denied", `category ${JSON.stringify(category)} is not one of the agent's categories`, {
      code: "category_not_allowed",
    });
  const { svcUserId, namedBy } = await personOf(ctx, input, boundPerson);
  const screened = await screenProposal(
    { request_id: input.requestId, ...input.proposal },
    { classifier: ctx.classifier },
  );
  if (screened.kind !== "accepted") {
    const { statusCode, message, ...detail } = trustLayerError(screened);
    throw refuse(statusCode === 422 ? "invalid_argument" : "unavailable", message, {
      ...(detail as unknown as JsonObject),
      status_code: statusCode,
    });
  }

  const now = ctx.clock.now();
  const canonical = JSON.parse(screened.canonicalCard) as { summary_title: string; category: string };
  const card = {
    id: uuid(),
    agentId,
    requestId: input.requestId,
    svcUserId,
    summaryTitle: canonical.summary_title,
    category: canonical.category,
    canonicalCard: screened.canonicalCard,
    cardDigest: screened.cardDigest,
    status: "queued" as const,
    ttlAt: new Date(now.getTime() + ttl * 1000),
    createdAt: now,
    namedBy,
    warnings: screened.warnings as unknown as JsonObject[],
  };
  const written = await ctx.cards.write({
    card,
    audit: {
      action: "card.proposed",
      actor: `agent:${agentId}`,
      at: now,
      detail: screened.warnings.length > 0 ? { warnings: screened.warnings as unknown as JsonValue[] } : null,
    },
    event: outboxRow(ctx.clock, cardProposed(agent, card), ctx.bus),
  });
  if (!written.replay) ctx.outbox.wake();
  return written;
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

/** The person the card is for: exactly one of the three identifiers names them. */
async function personOf(
  ctx: ProposalContext,
  input: InquireInput,
  boundPerson: string | undefined,
): Promise<{ svcUserId: string; namedBy: PersonIdentifier }> {
  const given = [input.opaqueId, input.svcUserId, input.userEmail].filter((value) => value !== undefined);
  if (given.length !== 1) throw refuse("invalid_argument", "give exactly one of opaque_id, svc_user_id and user_email");
  if (input.opaqueId !== undefined) {
    // The agent's active binding with this opaque_id, read with the agent (inquiryFacts).
    if (boundPerson === undefined) throw refuse("not_found", "no active binding of this agent has that opaque_id");
    return { svcUserId: boundPerson, namedBy: "opaque_id" };
  }
  if (input.svcUserId !== undefined)
    return { svcUserId: await knownHuman(ctx, input.svcUserId), namedBy: "svc_user_id" };
  // Nobody can register an address yet (the app's address registration comes with issue 15).
  throw refuse("not_found", "no person has registered that user_email");
}

async function knownHuman(ctx: ProposalContext, svcUserId: string): Promise<string> {
  if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(svcUserId))
    throw refuse("not_found", "no person has that svc_user_id");
  try {
    return (await ctx.account.getHuman({ svcUserId })).svcUserId;
  } catch (error) {
    if (error instanceof ConnectError && error.code === Code.NotFound)
      throw refuse("not_found", "no person has that svc_user_id");
    throw refuse("unavailable", "the user lookup failed; retry with the same request_id");
  }
}
