import { type MessageInitShape, toJson } from "@bufbuild/protobuf";
import { StructSchema, timestampDate } from "@bufbuild/protobuf/wkt";
import { Code, type ConnectError } from "@connectrpc/connect";
import type { MikroORM } from "@mikro-orm/postgresql";
import { ManualClock, uuid } from "@svc/platform";
import { CardStatus, type InquireRequest, type InquireRequestSchema } from "@svc/proto/agentlink/v1/agentlink_pb.js";
import { type Caller, Environment } from "@svc/proto/common/v1/caller_pb.js";
import { SignProofRequestSchema } from "@svc/proto/signing/v1/signing_pb.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { uniqueName } from "../../../test/harness/index.ts";
import { confirm } from "../src/confirmations/confirm.ts";
import { Card } from "../src/proposals/card.entity.ts";
import { AgentlinkRefusal } from "../src/refusal.ts";
import { refusal, type TestAgentlink } from "./support/agentlink.ts";
import { type InProcessConfirmations, startInProcessConfirmations } from "./support/in-process-confirmations.ts";

/**
 * Quorum cards against the real agentlink service (its PostgreSQL, NATS and inquire's statement): every
 * hostile inquire refused with its code and nothing stored; one card in every approver's inbox; one
 * decision per person; resolution at M approvals or D denials with one proof of every counted decision;
 * and the last approval racing a denial, resolved exactly once. Confirm runs here as the service runs it,
 * with the account and signing services answering in process (their contracts only: account finishes
 * every assertion as its person's, signing answers the request it was asked to sign).
 */
const start = new Date("2026-11-28T09:00:00Z");
const clock = new ManualClock(start);

const signed: ReturnType<typeof toJson>[] = [];
let confirmations: InProcessConfirmations;
let agentlink: TestAgentlink;
let orm: MikroORM;

beforeAll(async () => {
  confirmations = await startInProcessConfirmations("agentlink_quorum", {
    clock,
    account: {
      getHuman: ({ svcUserId }) => ({ svcUserId }),
      finishPasskeyAssertion: ({ responseJson }) => ({ svcUserId: responseJson, userVerified: true }),
    },
    signing: {
      signProof: (request) => {
        const claims = toJson(SignProofRequestSchema, request);
        signed.push(claims);
        return { token: `proof:${JSON.stringify(claims)}` };
      },
    },
  });
  ({ agentlink, orm } = confirmations);
});
afterAll(() => confirmations?.stop());

const context = () => confirmations.context();

/** What the confirm below was refused with (it runs in this process: a refusal, not yet a Connect error). */
async function refused(call: Promise<unknown>): Promise<AgentlinkRefusal> {
  const error = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(error instanceof AgentlinkRefusal)) throw new Error(`expected a refusal, got ${String(error)}`);
  return error;
}

/** The person decides the card with a (stand-in) passkey assertion, as their phone would. */
const decide = (person: string, cardId: string, verdict: "approve" | "denied") =>
  confirm(context(), {
    svcUserId: person,
    decisions: [{ cardId, verdict }],
    assertion: { challengeId: uuid(), responseJson: person },
  });

interface Team {
  caller: Caller;
  people: string[];
  opaqueIds: string[];
}

/** A production agent bound to `size` new people, with their opaque_ids for it; `labels` names the first of them. */
async function team(size: number, labels: string[] = []): Promise<Team> {
  const registered = await agentlink.console.registerAgent({
    organizationId: uniqueName("org"),
    environment: Environment.PRODUCTION,
    name: uniqueName("bot").slice(0, 40),
    categories: ["payments"],
  });
  const { caller } = await agentlink.client.authenticateAgentKey({ agentKey: registered.agentKey });
  const people: string[] = [];
  const opaqueIds: string[] = [];
  for (let i = 0; i < size; i++) {
    const { linkCode } = await agentlink.client.startBindSession({ caller, personLabel: labels[i] });
    const person = uuid();
    await agentlink.client.claimLinkCode({ svcUserId: person, linkCode });
    people.push(person);
    opaqueIds.push((await agentlink.client.checkBinding({ caller, linkCode })).opaqueId as string);
  }
  return { caller: caller as Caller, people, opaqueIds };
}

/** The `data.error` fields a refusal carries for the gateway. */
const detailOf = (error: ConnectError) =>
  Object.assign({}, ...error.findDetails(StructSchema).map((s) => toJson(StructSchema, s)));

type InquireInit = Exclude<MessageInitShape<typeof InquireRequestSchema>, InquireRequest>;

const ask = (of: Team, overrides: Partial<InquireInit> = {}) =>
  agentlink.client.inquire({
    caller: of.caller,
    requestId: uuid(),
    approvers: of.opaqueIds,
    quorum: { approve: 2 },
    proposal: { action: { summary_title: "Deploy release 4.2 to production", category: "payments" } },
    ...overrides,
  });

const cardCount = async () => Number((await agentlink.sql<{ n: string }>(`select count(*) as n from card`))[0]?.n);
const inbox = async (person: string) =>
  (await agentlink.client.listCards({ svcUserId: person })).cards.map((card) => card.cardId);
const statusOf = (of: Team, requestId: string) => agentlink.client.checkStatus({ caller: of.caller, requestId });
const auditOf = async (cardId: string) =>
  (
    await agentlink.sql<{ action: string }>(`select action from card_audit where card_id = $1 order by id`, [cardId])
  ).map((row) => row.action);
const eventsOf = async (cardId: string) =>
  (
    await agentlink.sql<{ subject: string }>(
      `select subject from outbox where message_id like $1 or message_id in
         (select resolution_id::text from card where id = $2 and resolution_id is not null) order by id`,
      [`%${cardId}`, cardId],
    )
  ).map((row) => row.subject.split(".").slice(-3).join("."));

describe("inquire with approvers and quorum", () => {
  it("refuses every hostile or malformed quorum with its code, and stores nothing", async () => {
    const three = await team(3);
    const stranger = (await team(1)).opaqueIds[0] as string;
    const [a, b, c] = three.opaqueIds as [string, string, string];
    const cases: [Partial<InquireInit>, Code, string | undefined, RegExp][] = [
      [{ approvers: [a, b, a] }, Code.InvalidArgument, "duplicate_approver", /approvers\[2\] repeats approvers\[0\]/],
      [{ approvers: [a, b, stranger] }, Code.NotFound, "approver_not_bound", /approvers\[2\]/],
      [{ quorum: { approve: 4 } }, Code.InvalidArgument, "invalid_quorum", /quorum.approve must be 1-3/],
      [{ quorum: { approve: 0 } }, Code.InvalidArgument, "invalid_quorum", /quorum.approve/],
      [{ quorum: { approve: 3, deny: 2 } }, Code.InvalidArgument, "invalid_quorum", /at most 4/],
      [{ quorum: { approve: 2, deny: 0 } }, Code.InvalidArgument, "invalid_quorum", /quorum.deny/],
      [{ quorum: undefined }, Code.InvalidArgument, "invalid_quorum", /approvers need a quorum/],
      [{ approvers: [a] }, Code.InvalidArgument, "invalid_approvers", /2-10/],
      [
        { approvers: Array.from({ length: 11 }, (_, i) => `${a}${i}`) },
        Code.InvalidArgument,
        "invalid_approvers",
        /2-10/,
      ],
      [{ opaqueId: c }, Code.InvalidArgument, undefined, /exactly one of approvers, opaque_id/],
      [{ approvers: [], opaqueId: c }, Code.InvalidArgument, undefined, /quorum is given only with approvers/],
    ];
    const before = await cardCount();
    for (const [overrides, code, errorCode, message] of cases) {
      const refused = await refusal(ask(three, overrides));
      expect(refused.code, JSON.stringify(overrides)).toBe(code);
      expect(refused.message).toMatch(message);
      if (errorCode) expect(detailOf(refused)).toMatchObject({ code: errorCode });
    }
    expect(await cardCount()).toBe(before);
  });

  it("queues one card that every approver sees, and a single-person inquire as before", async () => {
    const three = await team(3);
    const { cardId, status } = await ask(three, { quorum: { approve: 2, deny: 1 } });
    expect(status).toBe(CardStatus.QUEUED);
    for (const person of three.people) expect(await inbox(person)).toEqual([cardId]);
    const [listed] = (await agentlink.client.listCards({ svcUserId: three.people[1] as string })).cards;
    expect(listed?.quorum).toMatchObject({ approve: 2, deny: 1, approvers: 3, approvals: 0, denials: 0 });

    const single = await agentlink.client.inquire({
      caller: three.caller,
      requestId: uuid(),
      opaqueId: three.opaqueIds[2],
      proposal: { action: { summary_title: "Pay invoice 2231 to Acme", category: "payments" } },
    });
    const [alone] = (await agentlink.client.listCards({ svcUserId: three.people[2] as string })).cards.filter(
      (card) => card.cardId === single.cardId,
    );
    expect(alone?.quorum).toBeUndefined();
    expect(await inbox(three.people[0] as string)).toEqual([cardId]);
  });

  it("answers a person's inbox in one call: their cards as ListCards does, their binding notices as ListBindingNotices did", async () => {
    const two = await team(2);
    const { cardId } = await ask(two);
    const person = two.people[1] as string;
    const { cards, notices } = await agentlink.client.listInbox({ svcUserId: person });
    expect(cards.map((card) => card.cardId)).toEqual([cardId]);
    expect(cards).toEqual((await agentlink.client.listCards({ svcUserId: person })).cards);
    expect(notices).toHaveLength(1);
    expect(notices[0]?.agent?.displayName).toMatch(/^bot/);
    expect(notices).toEqual((await agentlink.client.listBindingNotices({ svcUserId: person })).notices);
    const stranger = await agentlink.client.listInbox({ svcUserId: uuid() });
    expect([stranger.cards, stranger.notices]).toEqual([[], []]);
  });
});

describe("the other approvers, as a person sees them", () => {
  it("names each by the agent's label for them (none when it gave none) with their verdict so far, never by an id", async () => {
    const three = await team(3, ["Dana, finance", "Sam (CTO)"]);
    const { cardId } = await ask(three, { quorum: { approve: 3, deny: 1 } });
    const othersSeenBy = async (person: number) =>
      (await agentlink.client.listCards({ svcUserId: three.people[person] as string })).cards.find(
        (card) => card.cardId === cardId,
      )?.quorum?.others;
    expect(await othersSeenBy(2)).toMatchObject([
      { personLabel: "Dana, finance", verdict: "" },
      { personLabel: "Sam (CTO)", verdict: "" },
    ]);
    await decide(three.people[0] as string, cardId, "approve");
    expect(await othersSeenBy(2)).toMatchObject([
      { personLabel: "Dana, finance", verdict: "approve" },
      { personLabel: "Sam (CTO)", verdict: "" },
    ]);
    const seenBySam = await othersSeenBy(1);
    expect(seenBySam).toMatchObject([{ personLabel: "Dana, finance", verdict: "approve" }, { verdict: "" }]);
    expect(seenBySam?.[1]?.personLabel).toBeUndefined();
    expect(JSON.stringify(seenBySam)).not.toContain(three.people[2] as string);
  });
});

describe("deciding a quorum card", () => {
  it("counts one decision per person, resolves at M approvals with one proof of every counted decision, and leaves every inbox", async () => {
    const three = await team(3);
    const [alice, bob, carol] = three.people as [string, string, string];
    const requestId = uuid();
    const { cardId } = await ask(three, { requestId, quorum: { approve: 2, deny: 2 } });

    clock.set(new Date(start.getTime() + 10_000));
    const first = await decide(alice, cardId, "approve");
    expect(first.resolutions).toEqual([{ requestId, cardId, token: "" }]);
    expect(await inbox(alice)).toEqual([]);
    expect(await inbox(bob)).toEqual([cardId]);
    const pending = await statusOf(three, requestId);
    expect(pending.status).toBe(CardStatus.QUEUED);
    expect(pending.quorum).toMatchObject({ approve: 2, deny: 2 });
    expect(pending.decisions.map((d) => [d.opaqueId, d.verdict, d.decidedAt && timestampDate(d.decidedAt)])).toEqual([
      [three.opaqueIds[0], "approve", new Date(start.getTime() + 10_000)],
      [three.opaqueIds[1], undefined, undefined],
      [three.opaqueIds[2], undefined, undefined],
    ]);
    expect(await eventsOf(cardId)).toEqual(["agents_ask.card.proposed"]);

    const twice = await refused(decide(alice, cardId, "denied"));
    expect(twice.kind).toBe("failed_precondition");
    expect(twice.detail).toEqual({ code: "already_decided" });

    clock.set(new Date(start.getTime() + 20_000));
    signed.length = 0;
    const second = await decide(carol, cardId, "approve");
    const token = second.resolutions[0]?.token as string;
    expect(token).toMatch(/^proof:/);
    expect(signed).toHaveLength(1);
    expect(signed[0]).toMatchObject({
      requestId,
      verdict: "PROOF_VERDICT_APPROVE",
      ceremonyId: second.ceremonyId,
      cardId,
      subject: three.opaqueIds[2],
      amr: ["passkey"],
      quorum: { approve: 2, deny: 2 },
      decisions: [
        {
          subject: three.opaqueIds[0],
          verdict: "PROOF_VERDICT_APPROVE",
          ceremonyId: first.ceremonyId,
          amr: ["passkey"],
        },
        {
          subject: three.opaqueIds[2],
          verdict: "PROOF_VERDICT_APPROVE",
          ceremonyId: second.ceremonyId,
          amr: ["passkey"],
        },
      ],
    });

    const resolved = await statusOf(three, requestId);
    expect(resolved).toMatchObject({ status: CardStatus.APPROVED, verdict: "approve", resolutionJwt: token });
    expect(resolved.decisions.map((d) => d.verdict)).toEqual(["approve", undefined, "approve"]);
    for (const person of three.people) expect(await inbox(person)).toEqual([]);

    const late = await refused(decide(bob, cardId, "denied"));
    expect(late.kind).toBe("failed_precondition");
    expect(late.message).toMatch(/no longer queued: approved/);
    expect(await auditOf(cardId)).toEqual(["card.proposed", "card.decided", "card.approved"]);
    expect(await eventsOf(cardId)).toEqual(["agents_ask.card.proposed", "agents_ask.resolution.confirmed"]);
  });

  it("one denial ends it by default, and a person not asked is refused as for any card not theirs", async () => {
    const three = await team(3);
    const { cardId } = await ask(three);
    expect((await refused(decide(uuid(), cardId, "approve"))).kind).toBe("not_found");
    await decide(three.people[0] as string, cardId, "approve");
    const veto = await decide(three.people[1] as string, cardId, "denied");
    expect(veto.resolutions[0]?.token).toMatch(/^proof:/);
    expect((await statusOf(three, (await orm.em.fork().findOneOrFail(Card, cardId)).requestId)).status).toBe(
      CardStatus.DENIED,
    );
    expect(await eventsOf(cardId)).toEqual(["agents_ask.card.proposed", "agents_ask.resolution.denied"]);
  });

  it("the last approval racing a denial resolves the card exactly once, whichever wins", async () => {
    const outcomes = new Set<string>();
    for (let round = 0; round < 12; round++) {
      const three = await team(3);
      const [alice, bob, carol] = three.people as [string, string, string];
      const { cardId } = await ask(three, { quorum: { approve: 2, deny: 1 } });
      await decide(alice, cardId, "approve");
      const raced = await Promise.allSettled([decide(bob, cardId, "approve"), decide(carol, cardId, "denied")]);
      const won = raced.filter((outcome) => outcome.status === "fulfilled");
      expect(won).toHaveLength(1);
      const [lost] = raced.flatMap((outcome) => (outcome.status === "rejected" ? [outcome.reason] : []));
      expect(lost).toBeInstanceOf(AgentlinkRefusal);
      expect((lost as AgentlinkRefusal).kind).toBe("failed_precondition");
      const audit = await auditOf(cardId);
      expect(audit.filter((action) => action === "card.approved" || action === "card.denied")).toHaveLength(1);
      const events = await eventsOf(cardId);
      expect(events.filter((subject) => subject.startsWith("agents_ask.resolution"))).toHaveLength(1);
      const decided = await agentlink.sql<{ n: string }>(
        `select count(*) as n from card_approver where card_id = $1 and verdict is not null`,
        [cardId],
      );
      expect(Number(decided[0]?.n)).toBe(2);
      outcomes.add(audit.at(-1) as string);
    }
    expect([...outcomes].every((action) => action === "card.approved" || action === "card.denied")).toBe(true);
  });
});

describe("a quorum card the agent cancels or nobody decides in time", () => {
  it("leaves every inbox when cancelled, and reads expired at ttl_at with the decisions made", async () => {
    const three = await team(3);
    const cancelled = await ask(three);
    await agentlink.client.cancel({
      caller: three.caller,
      requestId: (await orm.em.fork().findOneOrFail(Card, cancelled.cardId)).requestId,
    });
    for (const person of three.people) expect(await inbox(person)).not.toContain(cancelled.cardId);

    const requestId = uuid();
    const expiring = await ask(three, { requestId, ttlSeconds: 60 });
    await decide(three.people[0] as string, expiring.cardId, "approve");
    clock.set(new Date(clock.now().getTime() + 61_000));
    const expired = await statusOf(three, requestId);
    expect(expired.status).toBe(CardStatus.EXPIRED);
    expect(expired.decisions.map((d) => d.verdict)).toEqual(["approve", undefined, undefined]);
    expect((await refused(decide(three.people[1] as string, expiring.cardId, "approve"))).detail).toMatchObject({
      status_code: 410,
    });
  });
});

describe("a person's decision on a quorum card", () => {
  it("needs their passkey assertion", async () => {
    const two = await team(2);
    const { cardId } = await ask(two, { quorum: { approve: 1, deny: 1 } });
    const unasserted = await refused(
      confirm(context(), { svcUserId: two.people[0] as string, decisions: [{ cardId, verdict: "approve" }] }),
    );
    expect(unasserted.kind).toBe("invalid_argument");
    expect(await inbox(two.people[0] as string)).toEqual([cardId]);
  });
});
