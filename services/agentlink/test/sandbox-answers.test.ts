import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import { createLogger, ManualClock, uuid } from "@svc/platform";
import { SandboxBehavior } from "@svc/proto/account/v1/account_pb.js";
import { type Caller, Environment } from "@svc/proto/common/v1/caller_pb.js";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { uniqueName } from "../../../test/harness/index.ts";
import { SandboxAnswers, sandboxClaimMs, sandboxFastPathMs } from "../src/confirmations/sandbox-answers.ts";
import type { TestAgentlink } from "./support/agentlink.ts";
import { type InProcessConfirmations, startInProcessConfirmations } from "./support/in-process-confirmations.ts";

/**
 * Sandbox humans answer cards as reliably as a person: against the real agentlink service (its
 * PostgreSQL, NATS and inquire's statement) with the clock injected, a card whose fast-path answer was
 * lost is answered by the sandbox sweep once its answer is due; a card already answered or past its
 * ttl_at is left alone; a person who is no sandbox human leaves the sweep for good; and sweeps of two
 * replicas at once answer each card once. The account and signing services answer in process (their
 * contracts only); the service under test reaches no account service, so its own fast path never answers.
 */
const logger = createLogger("test", {}, "error");
const created = new Date("2026-11-22T10:00:00Z");
const at = (ms: number) => new Date(created.getTime() + ms);
const clock = new ManualClock(created);

/** How each person answers when asked (a sandbox human of the development environment), or absent for a person. */
const behaviors = new Map<string, SandboxBehavior>();
/** The account service's next `awayFor` look-ups fail as if it were away. */
let awayFor = 0;
let lookups = 0;
let proofs = 0;
/** Runs while a proof is signed: where a test makes another answer win the race. */
let whileSigning: (() => Promise<void>) | undefined;
let confirmations: InProcessConfirmations;
let agentlink: TestAgentlink;

beforeAll(async () => {
  confirmations = await startInProcessConfirmations("agentlink_sandbox", {
    clock,
    account: {
      getHuman: ({ svcUserId }) => {
        lookups++;
        if (awayFor-- > 0) throw new ConnectError("account is away", Code.Unavailable);
        const behavior = behaviors.get(svcUserId);
        return behavior === undefined
          ? { svcUserId }
          : { svcUserId, sandboxBehavior: behavior, sandboxEnvironment: Environment.DEVELOPMENT };
      },
      beginPasskeyAssertion: () => ({
        ceremonyId: uuid(),
        optionsJson: "{}",
        expiresAt: timestampFromDate(at(600_000)),
      }),
      sandboxAssert: ({ svcUserId }) => ({ responseJson: JSON.stringify({ svcUserId }) }),
      finishPasskeyAssertion: ({ responseJson }) => ({
        svcUserId: JSON.parse(responseJson).svcUserId,
        userVerified: true,
      }),
    },
    signing: {
      signProof: async ({ cardId }) => {
        proofs++;
        await whileSigning?.();
        return { token: `proof-${cardId}` };
      },
    },
  });
  agentlink = confirmations.agentlink;
});
afterAll(() => confirmations?.stop());
beforeEach(async () => {
  // Each test sees only its own cards: earlier ones are ended, so no sweep finds them.
  await agentlink.sql(`update card set status = 'cancelled', resolved_at = ttl_at where status = 'queued'`);
  clock.set(created);
  awayFor = 0;
  lookups = 0;
  proofs = 0;
  whileSigning = undefined;
});

/** A replica's sandbox answers, as the service builds them. */
const replica = (deployment: "development" | "production" = "development") =>
  new SandboxAnswers({
    context: () => confirmations.context(deployment),
    account: confirmations.account,
    passkeyOrigin: "http://127.0.0.1:8080",
    logger,
    deployment,
    retriesMs: [1, 1],
  });

/** A card inquire made at `created` for a new person bound to a new agent of `environment`. */
async function cardFor(
  behavior: SandboxBehavior | undefined,
  environment = Environment.DEVELOPMENT,
): Promise<{ cardId: string; person: string; caller: Caller; requestId: string }> {
  const registered = await agentlink.console.registerAgent({
    organizationId: uniqueName("org"),
    environment,
    name: uniqueName("bot").slice(0, 40),
    categories: ["payments"],
  });
  const { caller } = await agentlink.client.authenticateAgentKey({ agentKey: registered.agentKey });
  const { linkCode } = await agentlink.client.startBindSession({ caller });
  const person = uuid();
  if (behavior !== undefined) behaviors.set(person, behavior);
  await agentlink.client.claimLinkCode({ svcUserId: person, linkCode });
  const { opaqueId } = await agentlink.client.checkBinding({ caller, linkCode });
  const requestId = uuid();
  const { cardId } = await agentlink.client.inquire({
    caller,
    requestId,
    opaqueId,
    proposal: { action: { summary_title: "Pay invoice 2231 to Acme", category: "payments" } },
  });
  return { cardId, person, caller: caller as Caller, requestId };
}

const cardState = async (cardId: string) =>
  (
    await agentlink.sql<{ status: string; sandbox_answer_at: Date | null }>(
      `select status, sandbox_answer_at from card where id = $1`,
      [cardId],
    )
  )[0];
const resolutionsOf = async (cardId: string) =>
  (
    await agentlink.sql<{ action: string }>(
      `select action from card_audit where card_id = $1 and action in ('card.approved', 'card.denied') order by id`,
      [cardId],
    )
  ).map((row) => row.action);

describe("inquire records when a sandbox human's answer is due", () => {
  it("on a card of the development environment, not on one of production", async () => {
    const development = await cardFor(undefined);
    expect(await cardState(development.cardId)).toEqual({ status: "queued", sandbox_answer_at: at(sandboxFastPathMs) });
    const production = await cardFor(undefined, Environment.PRODUCTION);
    expect(await cardState(production.cardId)).toEqual({ status: "queued", sandbox_answer_at: null });
  });
});

describe("a sandbox human's answer to a card survives its process", () => {
  it("a card whose fast path never answered is answered by the sweep once its answer is due, not before", async () => {
    const approving = await cardFor(SandboxBehavior.CONFIRM);
    const denying = await cardFor(SandboxBehavior.DECLINE);
    const sweeper = replica();

    clock.set(at(sandboxFastPathMs - 1));
    expect(await sweeper.sweep(20)).toBe(0);
    expect((await cardState(approving.cardId))?.status).toBe("queued");

    clock.set(at(sandboxFastPathMs));
    expect(await sweeper.sweep(20)).toBe(2);
    expect((await cardState(approving.cardId))?.status).toBe("approved");
    expect(await resolutionsOf(approving.cardId)).toEqual(["card.approved"]);
    expect((await cardState(denying.cardId))?.status).toBe("denied");
    expect(await resolutionsOf(denying.cardId)).toEqual(["card.denied"]);
    clock.set(at(sandboxFastPathMs + sandboxClaimMs));
    expect(await sweeper.sweep(20)).toBe(0);
  });

  it("a fast path that failed on every retry (the account service away) is answered by the sweep", async () => {
    const card = await cardFor(SandboxBehavior.CONFIRM);
    const sweeper = replica();
    awayFor = Number.POSITIVE_INFINITY;
    await sweeper.answerSoon("development", card.cardId);
    expect(lookups).toBe(3);
    expect((await cardState(card.cardId))?.status).toBe("queued");

    awayFor = 0;
    clock.set(at(sandboxFastPathMs));
    expect(await sweeper.sweep(20)).toBe(1);
    expect(await resolutionsOf(card.cardId)).toEqual(["card.approved"]);
  });

  it("a transient failure of the fast path is retried: the answer comes without the sweep", async () => {
    const card = await cardFor(SandboxBehavior.DECLINE);
    awayFor = 2;
    await replica().answerSoon("development", card.cardId);
    // Two failed attempts, the third one's look-up, and confirm's own.
    expect(lookups).toBe(4);
    expect(await resolutionsOf(card.cardId)).toEqual(["card.denied"]);
  });

  it("a sweep's answer that failed is claimed again only once its claim ran out", async () => {
    const card = await cardFor(SandboxBehavior.CONFIRM);
    const sweeper = replica();
    clock.set(at(sandboxFastPathMs));
    awayFor = Number.POSITIVE_INFINITY;
    expect(await sweeper.sweep(20)).toBe(1);
    expect((await cardState(card.cardId))?.status).toBe("queued");

    awayFor = 0;
    clock.set(at(sandboxFastPathMs + sandboxClaimMs - 1));
    expect(await sweeper.sweep(20)).toBe(0);
    clock.set(at(sandboxFastPathMs + sandboxClaimMs));
    expect(await sweeper.sweep(20)).toBe(1);
    expect(await resolutionsOf(card.cardId)).toEqual(["card.approved"]);
  });

  it("a person who is no sandbox human, or a silent one, is asked about once and then left to answer", async () => {
    const person = await cardFor(undefined);
    const silent = await cardFor(SandboxBehavior.SILENT);
    const sweeper = replica();
    clock.set(at(sandboxFastPathMs));
    expect(await sweeper.sweep(20)).toBe(2);
    expect(lookups).toBe(2);
    for (const { cardId } of [person, silent])
      expect(await cardState(cardId)).toEqual({ status: "queued", sandbox_answer_at: null });
    clock.set(at(sandboxFastPathMs + sandboxClaimMs));
    expect(await sweeper.sweep(20)).toBe(0);
    expect(lookups).toBe(2);
  });

  it("leaves alone a card already answered (cancelled by its agent) and one past its ttl_at (the expire sweep's)", async () => {
    const cancelled = await cardFor(SandboxBehavior.CONFIRM);
    await agentlink.client.cancel({ caller: cancelled.caller, requestId: cancelled.requestId, reason: "" });
    const late = await cardFor(SandboxBehavior.CONFIRM);
    clock.set(at(600_000));
    expect(await replica().sweep(20)).toBe(0);
    expect(lookups).toBe(0);
    expect((await cardState(cancelled.cardId))?.status).toBe("cancelled");
    expect((await cardState(late.cardId))?.status).toBe("queued");
    expect([...(await resolutionsOf(cancelled.cardId)), ...(await resolutionsOf(late.cardId))]).toEqual([]);
  });

  it("the fast path finding the card answered already leaves it alone", async () => {
    const card = await cardFor(SandboxBehavior.CONFIRM);
    clock.set(at(sandboxFastPathMs));
    expect(await replica().sweep(20)).toBe(1);
    await replica().answerSoon("development", card.cardId);
    expect(proofs).toBe(1);
    expect(await resolutionsOf(card.cardId)).toEqual(["card.approved"]);
  });

  it("an attempt that lost the race to another answer is done, not a failure to retry: the winner's answer stands", async () => {
    const pending = await cardFor(SandboxBehavior.CONFIRM);
    awayFor = 1;
    await expect(replica().answer(pending.cardId)).rejects.toThrow("account is away");

    const card = await cardFor(SandboxBehavior.CONFIRM);
    // The agent cancels while the proof is signed: confirm then finds the card no longer queued.
    whileSigning = async () => {
      await agentlink.client.cancel({ caller: card.caller, requestId: card.requestId, reason: "" });
    };
    await expect(replica().answer(card.cardId)).resolves.toBeUndefined();
    expect(proofs).toBe(1);
    expect((await cardState(card.cardId))?.status).toBe("cancelled");
    expect(await resolutionsOf(card.cardId)).toEqual([]);
  });

  it("sweeps of two replicas at once answer each card once", async () => {
    const cards = await Promise.all(Array.from({ length: 12 }, () => cardFor(SandboxBehavior.CONFIRM)));
    clock.set(at(sandboxFastPathMs));
    const [one, other] = await Promise.all([replica().sweep(20), replica().sweep(20)]);
    expect(one + other).toBe(12);
    expect(proofs).toBe(12);
    for (const { cardId } of cards) expect(await resolutionsOf(cardId)).toEqual(["card.approved"]);
  });

  it("a production deployment never sweeps", async () => {
    const card = await cardFor(SandboxBehavior.CONFIRM);
    clock.set(at(sandboxFastPathMs));
    expect(await replica("production").sweep(20)).toBe(0);
    expect((await cardState(card.cardId))?.status).toBe("queued");
  });
});
