import type { KeyObject } from "node:crypto";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { Client } from "@connectrpc/connect";
import { type EntityManager, LockMode } from "@mikro-orm/postgresql";
import { type Clock, type EventBus, enqueueEvent, type OutboxRelay, uuid } from "@svc/platform";
import type { AccountService } from "@svc/proto/account/v1/account_pb.js";
import { Environment } from "@svc/proto/common/v1/caller_pb.js";
import { ProofVerdict, type SigningService } from "@svc/proto/signing/v1/signing_pb.js";
import { Agent } from "../agents/agent.entity.ts";
import { opaqueIdFor } from "../binding/opaque-id.ts";
import { Card, CardAudit } from "../proposals/card.entity.ts";
import { resolutionDecided } from "../proposals/card-events.ts";
import { publishCardsLeftQueue } from "../proposals/card-watch.ts";
import { AgentlinkRefusal, refuse } from "../refusal.ts";
import { accountRefusal, assertionRefusal } from "./account-answers.ts";
import { assertionBinding, checkedDecisions, type Decision } from "./decisions.ts";
import { decidedCards, requireDecidable } from "./person-cards.ts";

export interface ConfirmationContext {
  em: EntityManager;
  clock: Clock;
  /** AGENTLINK_OPAQUE_ID_KEY: the proof's `sub` is the person's opaque_id for the card's agent. */
  opaqueIdKey: KeyObject;
  account: Pick<Client<typeof AccountService>, "getHuman" | "finishPasskeyAssertion">;
  signing: Pick<Client<typeof SigningService>, "signProof">;
  deployment: "development" | "production";
  bus: Pick<EventBus, "subject" | "nc" | "subjectPrefix">;
  outbox: Pick<OutboxRelay, "wake">;
}

export interface ConfirmInput {
  svcUserId: string;
  decisions: readonly { cardId: string; verdict: string }[];
  ceremonyId?: string | undefined;
  assertion?: { challengeId: string; responseJson: string } | undefined;
}

export interface Confirmed {
  ceremonyId: string;
  signedAt: Date;
  resolutions: { requestId: string; cardId: string; token: string }[];
}

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i;

/**
 * `confirm`: the person applies 1-20 decisions at once. In order: the decisions' form; a repeat of an
 * earlier confirm's `ceremony_id` answers that confirm's resolutions; every card the person's and queued
 * (404 / 410 / 409, nothing applied); the passkey assertion, whose binding commits to these decisions and
 * their card digests (a sandbox human in development may omit it); one proof per card, all with one
 * `iat` and `ceremony_id`; then the cards, their audit rows and the resolution events commit together,
 * under row locks that re-check every card, so of two confirms of one card exactly one applies.
 */
export async function confirm(ctx: ConfirmationContext, input: ConfirmInput): Promise<Confirmed> {
  const decisions = checkedDecisions(input.decisions);
  if (input.ceremonyId !== undefined && !UUID_V4.test(input.ceremonyId))
    throw refuse("invalid_argument", "ceremony_id must be a uuid v4");
  const ceremonyId = input.ceremonyId?.toLowerCase() ?? uuid();
  // Only a ceremony_id the caller chose can have been used before.
  const earlier =
    input.ceremonyId === undefined ? undefined : await earlierConfirm(ctx.em, input.svcUserId, ceremonyId, decisions);
  if (earlier) return earlier;

  const { byId, document } = await decidedCards(ctx.em, input.svcUserId, decisions, ctx.clock.now());
  const amr = await approvalMethod(ctx, input, assertionBinding(document));

  const agents = new Map(
    (await ctx.em.find(Agent, { id: { $in: [...new Set([...byId.values()].map((card) => card.agentId))] } })).map(
      (a) => [a.id, a],
    ),
  );
  // One `iat` for every proof of this call, and the same instant as `signed_at` and `resolved_at`.
  const signedAt = new Date(Math.floor(ctx.clock.now().getTime() / 1000) * 1000);
  const signed = await Promise.all(
    decisions.map(async ({ cardId, verdict }) => {
      const card = byId.get(cardId) as Card;
      const proof = await ctx.signing
        .signProof({
          requestId: card.requestId,
          verdict: verdict === "approve" ? ProofVerdict.APPROVE : ProofVerdict.DENIED,
          ceremonyId,
          cardId,
          agentId: card.agentId,
          ...(card.namedBy === "opaque_id" && { subject: opaqueIdFor(ctx.opaqueIdKey, card.agentId, card.svcUserId) }),
          cardDigest: card.cardDigest,
          amr,
          signedAt: timestampFromDate(signedAt),
        })
        .catch(() => {
          throw refuse("unavailable", "the signing service did not answer; confirm again");
        });
      return { cardId, verdict, token: proof.token, resolutionId: uuid() };
    }),
  );

  let applied: Card[];
  try {
    applied = await ctx.em.transactional(async (em) => {
      const locked = await em.find(
        Card,
        { id: { $in: decisions.map((d) => d.cardId) } },
        { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true, orderBy: { id: "asc" } },
      );
      requireDecidable(locked, input.svcUserId, decisions, ctx.clock.now());
      for (const { cardId, verdict, token, resolutionId } of signed) {
        const card = locked.find((c) => c.id === cardId) as Card;
        const agent = agents.get(card.agentId);
        if (!agent) throw new Error(`card ${card.id} has no agent ${card.agentId}`);
        Object.assign(card, {
          status: verdict === "approve" ? "approved" : "denied",
          verdict,
          ceremonyId,
          resolutionId,
          resolutionJwt: token,
          resolvedAt: signedAt,
        });
        em.create(CardAudit, {
          cardId,
          action: verdict === "approve" ? "card.approved" : "card.denied",
          actor: `human:${input.svcUserId}`,
          at: signedAt,
          detail: { ceremony_id: ceremonyId, resolution_id: resolutionId, amr },
        });
        enqueueEvent(em, ctx.clock, resolutionDecided(agent, card), ctx.bus);
      }
      return locked;
    });
  } catch (error) {
    // A concurrent repeat of this very confirm committed first: its resolutions are the answer.
    const committed =
      error instanceof AgentlinkRefusal && input.ceremonyId !== undefined
        ? await earlierConfirm(ctx.em.fork(), input.svcUserId, ceremonyId, decisions)
        : undefined;
    if (committed) return committed;
    throw error;
  }
  ctx.outbox.wake();
  publishCardsLeftQueue(ctx.bus, applied);
  return {
    ceremonyId,
    signedAt,
    resolutions: signed.map(({ cardId, token }) => ({
      requestId: (byId.get(cardId) as Card).requestId,
      cardId,
      token,
    })),
  };
}

/**
 * How the person approved: their passkey, over exactly these decisions (the account service finishes the
 * assertion only for the binding it was begun with), or, for a sandbox human in development, their fixed
 * behaviour; a sandbox human's assertion, when given, is verified all the same.
 */
async function approvalMethod(
  ctx: ConfirmationContext,
  input: ConfirmInput,
  binding: string,
): Promise<["passkey"] | ["sandbox"]> {
  const human = await ctx.account.getHuman({ svcUserId: input.svcUserId }).catch(accountRefusal);
  const sandbox = ctx.deployment !== "production" && human.sandboxEnvironment === Environment.DEVELOPMENT;
  if (input.assertion === undefined) {
    if (sandbox) return ["sandbox"];
    throw refuse("invalid_argument", "passkey_assertion is required: get its challenge from confirm-challenge");
  }
  const asserted = await ctx.account
    .finishPasskeyAssertion({
      ceremonyId: input.assertion.challengeId,
      responseJson: input.assertion.responseJson,
      binding,
    })
    .catch(assertionRefusal);
  if (asserted.svcUserId !== input.svcUserId || !asserted.userVerified)
    throw refuse("permission_denied", "the passkey assertion is not the signed-in person's");
  return sandbox ? ["sandbox"] : ["passkey"];
}

/**
 * The resolutions an earlier confirm with this `ceremony_id` made: the same decisions by the same person
 * answer them again (never new ones); any other use of the id is a conflict.
 */
async function earlierConfirm(
  em: EntityManager,
  svcUserId: string,
  ceremonyId: string,
  decisions: readonly Decision[],
): Promise<Confirmed | undefined> {
  const done = await em.find(Card, { ceremonyId }, { orderBy: { id: "asc" } });
  if (done.length === 0) return undefined;
  const asked = new Map(decisions.map((d) => [d.cardId, d.verdict]));
  const same =
    done.length === asked.size &&
    done.every((card) => card.svcUserId === svcUserId && asked.get(card.id) === card.verdict);
  if (!same) throw refuse("failed_precondition", `ceremony_id ${ceremonyId} was already used for other decisions`);
  const byId = new Map(done.map((card) => [card.id, card]));
  return {
    ceremonyId,
    signedAt: done[0]?.resolvedAt as Date,
    resolutions: decisions.map(({ cardId }) => {
      const card = byId.get(cardId) as Card;
      return { requestId: card.requestId, cardId, token: card.resolutionJwt as string };
    }),
  };
}
