import type { KeyObject } from "node:crypto";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { Client } from "@connectrpc/connect";
import { type EntityManager, LockMode } from "@mikro-orm/postgresql";
import {
  type Clock,
  committedEvent,
  type EventBus,
  enqueueEvent,
  type OutboxEvent,
  type OutboxRelay,
  publishInboxChanged,
  underItemTrace,
  uuid,
} from "@svc/platform";
import type { AccountService } from "@svc/proto/account/v1/account_pb.js";
import { Environment } from "@svc/proto/common/v1/caller_pb.js";
import { type ProofDecisionSchema, ProofVerdict, type SigningService } from "@svc/proto/signing/v1/signing_pb.js";
import { Agent } from "../agents/agent.entity.ts";
import { opaqueIdFor } from "../binding/opaque-id.ts";
import { Card, CardApprover, CardAudit, type Verdict } from "../proposals/card.entity.ts";
import { resolutionDecided } from "../proposals/card-events.ts";
import { type QuorumView, quorumView } from "../proposals/card-reader.ts";
import { publishCardsLeftQueue } from "../proposals/card-watch.ts";
import { AgentlinkRefusal, refuse } from "../refusal.ts";
import { accountRefusal, assertionRefusal } from "./account-answers.ts";
import { assertionBinding, checkedDecisions, type Decision } from "./decisions.ts";
import { approverRowsOf, decidedCards, requireDecidable } from "./person-cards.ts";

export interface ConfirmationContext {
  em: EntityManager;
  clock: Clock;
  /** AGENTLINK_OPAQUE_ID_KEY: the proof's `sub` is the person's opaque_id for the card's agent. */
  opaqueIdKey: KeyObject;
  account: Pick<Client<typeof AccountService>, "getHuman" | "finishPasskeyAssertion">;
  signing: Pick<Client<typeof SigningService>, "signProof">;
  deployment: "development" | "production";
  bus: Pick<EventBus, "subject" | "nc" | "subjectPrefix">;
  outbox: Pick<OutboxRelay, "publishCommitted">;
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
  // A card to one person is signed before its transaction; a quorum card only when a decision resolves
  // it, under its row lock, since its proof holds every decision counted until then.
  const signed = new Map(
    await Promise.all(
      decisions
        .filter(({ cardId }) => (byId.get(cardId) as Card).quorumApprove === null)
        .map(async ({ cardId, verdict }) => {
          const card = byId.get(cardId) as Card;
          const token = await underItemTrace(card.traceContext ?? null, "agents_ask sign proof", () =>
            sign(ctx, card, {
              verdict,
              ceremonyId,
              amr,
              signedAt,
              ...(card.namedBy === "opaque_id" && {
                subject: opaqueIdFor(ctx.opaqueIdKey, card.agentId, card.svcUserId),
              }),
            }),
          );
          return [cardId, token] as const;
        }),
    ),
  );

  let outcome: { applied: Card[]; resolved: Card[]; asked: string[]; quorums: Map<string, QuorumView> };
  // Written in the transaction, handed to the relay once it committed.
  const enqueued: OutboxEvent[] = [];
  try {
    outcome = await ctx.em.transactional(async (em) => {
      const locked = await em.find(
        Card,
        { id: { $in: decisions.map((d) => d.cardId) } },
        { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true, orderBy: { id: "asc" } },
      );
      const asApprover = await approverRowsOf(em, input.svcUserId, locked, { refresh: true });
      requireDecidable(locked, input.svcUserId, decisions, ctx.clock.now(), asApprover);
      const resolved: Card[] = [];
      const asked: string[] = [];
      const quorums = new Map<string, QuorumView>();
      for (const { cardId, verdict } of decisions) {
        const card = locked.find((c) => c.id === cardId) as Card;
        const agent = agents.get(card.agentId);
        if (!agent) throw new Error(`card ${card.id} has no agent ${card.agentId}`);
        const decision = { verdict, ceremonyId, amr, signedAt };
        let token = signed.get(cardId);
        if (token === undefined) {
          const counted = await countDecision(em, card, input.svcUserId, decision);
          if (counted.outcome === undefined) {
            em.create(CardAudit, {
              cardId,
              action: "card.decided",
              actor: `human:${input.svcUserId}`,
              at: signedAt,
              detail: { verdict, ceremony_id: ceremonyId, amr },
            });
            continue;
          }
          asked.push(...counted.approvers.map((approver) => approver.svcUserId));
          const view = quorumView(
            ctx.opaqueIdKey,
            {
              agentId: card.agentId,
              quorumApprove: card.quorumApprove as number,
              quorumDeny: card.quorumDeny as number,
            },
            counted.approvers,
          );
          quorums.set(cardId, view);
          const approvers = counted.approvers;
          token = await underItemTrace(card.traceContext ?? null, "agents_ask sign proof", () =>
            signQuorumProof(ctx, card, input.svcUserId, decision, approvers),
          );
        }
        const resolutionId = uuid();
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
        // The resolution event continues the inquire's trace, so its webhook delivery is part of that trace.
        await underItemTrace(card.traceContext ?? null, "agents_ask resolve", async () =>
          enqueued.push(enqueueEvent(em, ctx.clock, resolutionDecided(agent, card), ctx.bus)),
        );
        resolved.push(card);
      }
      return { applied: locked, resolved, asked, quorums };
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
  ctx.outbox.publishCommitted(enqueued.map(committedEvent));
  // Only a resolution ends the agent's long-poll; a counted decision takes the card out of its person's inbox.
  publishCardsLeftQueue(ctx.bus, outcome.resolved, outcome.quorums);
  publishInboxChanged(ctx.bus, [input.svcUserId, ...outcome.asked]);
  return {
    ceremonyId,
    signedAt,
    resolutions: decisions.map(({ cardId }) => {
      const card = outcome.applied.find((c) => c.id === cardId) as Card;
      return { requestId: card.requestId, cardId, token: card.resolutionJwt ?? "" };
    }),
  };
}

const proofVerdict = (verdict: Verdict) => (verdict === "approve" ? ProofVerdict.APPROVE : ProofVerdict.DENIED);

/** One Proof of Resolution of the card from signing. */
async function sign(
  ctx: ConfirmationContext,
  card: Card,
  claims: {
    verdict: Verdict;
    ceremonyId: string;
    amr: string[];
    signedAt: Date;
    subject?: string;
    quorum?: { approve: number; deny: number };
    decisions?: MessageInitShape<typeof ProofDecisionSchema>[];
  },
): Promise<string> {
  const { verdict, signedAt, ...rest } = claims;
  const proof = await ctx.signing
    .signProof({
      ...rest,
      requestId: card.requestId,
      verdict: proofVerdict(verdict),
      cardId: card.id,
      agentId: card.agentId,
      cardDigest: card.cardDigest,
      signedAt: timestampFromDate(signedAt),
    })
    .catch(() => {
      throw refuse("unavailable", "the signing service did not answer; confirm again");
    });
  return proof.token;
}

/**
 * A quorum card's one proof, signed by the decision that resolved it: the usual claims are that decision's,
 * `decisions` every decision counted until then, oldest first.
 */
function signQuorumProof(
  ctx: ConfirmationContext,
  card: Card,
  decider: string,
  decision: { verdict: Verdict; ceremonyId: string; amr: string[]; signedAt: Date },
  approvers: readonly CardApprover[],
): Promise<string> {
  const opaqueIdOf = (svcUserId: string) => opaqueIdFor(ctx.opaqueIdKey, card.agentId, svcUserId);
  const decided = approvers
    .filter((approver) => approver.decidedAt)
    .sort((a, b) => (a.decidedAt as Date).getTime() - (b.decidedAt as Date).getTime() || a.position - b.position);
  return sign(ctx, card, {
    ...decision,
    subject: opaqueIdOf(decider),
    quorum: { approve: card.quorumApprove as number, deny: card.quorumDeny as number },
    decisions: decided.map((approver) => ({
      subject: opaqueIdOf(approver.svcUserId),
      verdict: proofVerdict(approver.verdict as Verdict),
      ceremonyId: approver.ceremonyId as string,
      signedAt: timestampFromDate(approver.decidedAt as Date),
      amr: [approver.amr as string],
    })),
  });
}

/**
 * Records the person's decision on a quorum card whose row the caller has locked, and counts: the card's
 * verdict once `approve` approvals or `deny` denials are counted, else undefined. With the approvers as
 * they now stand, in the agent's order.
 */
async function countDecision(
  em: EntityManager,
  card: Card,
  svcUserId: string,
  decision: { verdict: Verdict; ceremonyId: string; amr: readonly string[]; signedAt: Date },
): Promise<{ outcome: Verdict | undefined; approvers: CardApprover[] }> {
  const approvers = await em.find(CardApprover, { cardId: card.id }, { refresh: true, orderBy: { position: "asc" } });
  const mine = approvers.find((approver) => approver.svcUserId === svcUserId);
  if (!mine || mine.verdict) throw new Error(`card ${card.id} does not wait on ${svcUserId}`);
  Object.assign(mine, {
    verdict: decision.verdict,
    ceremonyId: decision.ceremonyId,
    decidedAt: decision.signedAt,
    amr: decision.amr[0],
  });
  const counted = (verdict: Verdict) => approvers.filter((approver) => approver.verdict === verdict).length;
  const outcome =
    counted("approve") >= (card.quorumApprove as number)
      ? "approve"
      : counted("denied") >= (card.quorumDeny as number)
        ? "denied"
        : undefined;
  return { outcome, approvers };
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
 * The decisions an earlier confirm with this `ceremony_id` made (on cards to one person, and the
 * quorum cards it counted a decision on): the same decisions by the same person answer them again (never
 * new ones), with the proof of each card it resolved; any other use of the id is a conflict.
 */
async function earlierConfirm(
  em: EntityManager,
  svcUserId: string,
  ceremonyId: string,
  decisions: readonly Decision[],
): Promise<Confirmed | undefined> {
  const [single, counted] = await Promise.all([
    em.find(Card, { ceremonyId, quorumApprove: null }),
    em.find(CardApprover, { ceremonyId }),
  ]);
  const quorumCards =
    counted.length === 0 ? [] : await em.find(Card, { id: { $in: counted.map((approver) => approver.cardId) } });
  const done = [
    ...single.map((card) => ({ card, svcUserId: card.svcUserId, verdict: card.verdict, at: card.resolvedAt })),
    ...counted.map((approver) => ({
      card: quorumCards.find((card) => card.id === approver.cardId) as Card,
      svcUserId: approver.svcUserId,
      verdict: approver.verdict,
      at: approver.decidedAt,
    })),
  ];
  if (done.length === 0) return undefined;
  const asked = new Map(decisions.map((d) => [d.cardId, d.verdict]));
  const same =
    done.length === asked.size &&
    done.every((made) => made.svcUserId === svcUserId && asked.get(made.card.id) === made.verdict);
  if (!same) throw refuse("failed_precondition", `ceremony_id ${ceremonyId} was already used for other decisions`);
  const byId = new Map(done.map((made) => [made.card.id, made.card]));
  return {
    ceremonyId,
    signedAt: done[0]?.at as Date,
    resolutions: decisions.map(({ cardId }) => {
      const card = byId.get(cardId) as Card;
      // A quorum card this confirm did not resolve has no proof from it.
      return {
        requestId: card.requestId,
        cardId,
        token: card.ceremonyId === ceremonyId ? (card.resolutionJwt ?? "") : "",
      };
    }),
  };
}
