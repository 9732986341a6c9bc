import { fromBinary, type MessageInitShape } from "@bufbuild/protobuf";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { Code } from "@connectrpc/connect";
import { connectNats, ManualClock, type NatsConnection, notificationSubject, uuid } from "@svc/platform";
import { CardStatus, type InquireRequest, type InquireRequestSchema } from "@svc/proto/agentlink/v1/agentlink_pb.js";
import { type CardLeftQueue, CardLeftQueueSchema } from "@svc/proto/agentlink/v1/card_watch_pb.js";
import { type Caller, Environment } from "@svc/proto/common/v1/caller_pb.js";
import { EventSchema } from "@svc/proto/events/v1/events_pb.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { uniqueName } from "../../../test/harness/index.ts";
import { detailOf, refusal, startTestAgentlink, type TestAgentlink } from "./support/agentlink.ts";

const start = new Date("2026-11-24T09:00:00Z");
const clock = new ManualClock(start);
let agentlink: TestAgentlink;

beforeAll(async () => {
  // Nothing listens on port 1: every lookup of a svc_user_id fails.
  agentlink = await startTestAgentlink("agentlink_cards", {
    clock,
    env: { AGENTLINK_ACCOUNT_URL: "http://127.0.0.1:1" },
  });
});
afterAll(async () => {
  await agentlink?.stop();
});

interface BoundAgent {
  id: string;
  name: string;
  caller: Caller;
  opaqueId: string;
  person: string;
}

/** A registered agent bound to a new person, with the person's opaque_id for it. */
async function boundAgent(): Promise<BoundAgent> {
  const name = uniqueName("bot").slice(0, 40);
  const registered = await agentlink.console.registerAgent({
    organizationId: uniqueName("org"),
    environment: Environment.DEVELOPMENT,
    name,
    categories: ["payments", "travel"],
  });
  const { caller } = await agentlink.client.authenticateAgentKey({ agentKey: registered.agentKey });
  const { linkCode } = await agentlink.client.startBindSession({ caller });
  const person = uuid();
  await agentlink.client.claimLinkCode({ svcUserId: person, linkCode });
  const { opaqueId } = await agentlink.client.checkBinding({ caller, linkCode });
  return { id: registered.agent!.agentId, name, caller: caller!, opaqueId: opaqueId!, person };
}

const action = { summary_title: "Pay invoice 2231 to Acme", category: "payments" };

type InquireInit = Exclude<MessageInitShape<typeof InquireRequestSchema>, InquireRequest>;

const ask = (agent: BoundAgent, overrides: Partial<InquireInit> = {}) =>
  agentlink.client.inquire({
    caller: agent.caller,
    requestId: uuid(),
    opaqueId: agent.opaqueId,
    proposal: { action },
    ...overrides,
  });

/** The `data.error` fields a refusal carries for the gateway. */

describe("inquire", () => {
  it("queues the card for the bound person with its canonical card, audit row and proposed event", async () => {
    clock.set(start);
    const agent = await boundAgent();
    const requestId = uuid();
    const answer = await ask(agent, { requestId, ttlSeconds: 120 });
    expect(answer.status).toBe(CardStatus.QUEUED);
    expect(answer.idempotentReplay).toBe(false);
    expect(timestampDate(answer.ttlAt!)).toEqual(new Date(start.getTime() + 120_000));

    const [card] = await agentlink.sql<{ svc_user_id: string; canonical_card: string; card_digest: string }>(
      "select * from card where id = $1",
      [answer.cardId],
    );
    expect(card?.svc_user_id).toBe(agent.person);
    expect(JSON.parse(card!.canonical_card)).toEqual(action);
    expect(card?.card_digest).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const audit = await agentlink.sql("select action, actor, at from card_audit where card_id = $1", [answer.cardId]);
    expect(audit).toEqual([{ action: "card.proposed", actor: `agent:${agent.id}`, at: start }]);

    const [row] = await agentlink.sql<{ subject: string; message_id: string; payload: Buffer }>(
      "select subject, message_id, payload, created_at, published_at from outbox where message_id = $1",
      [`agents_ask.card.proposed:${answer.cardId}`],
    );
    expect(row).toMatchObject({
      subject: `${agentlink.env.SVC_EVENT_SUBJECT_PREFIX}.agents_ask.card.proposed`,
      created_at: start,
    });
    const event = fromBinary(EventSchema, row!.payload);
    expect(event.payload.case).toBe("agentsAskCardProposed");
    expect(event.payload.value).toMatchObject({
      requestId,
      cardId: answer.cardId,
      agentId: agent.id,
      agentName: agent.name,
      category: "payments",
      summaryTitle: action.summary_title,
    });
  });

  it("answers a repeated request_id with the first card, whatever the repeat's body", async () => {
    const agent = await boundAgent();
    const requestId = uuid();
    const first = await ask(agent, { requestId });
    const again = await ask(agent, {
      requestId,
      ttlSeconds: 5,
      proposal: { action: { summary_title: "Something else", category: "travel" } },
    });
    expect([again.cardId, again.idempotentReplay, again.ttlAt]).toEqual([first.cardId, true, first.ttlAt]);
    const cards = await agentlink.sql("select id from card where request_id = $1", [requestId]);
    expect(cards).toHaveLength(1);
  });

  it("answers concurrent calls with one request_id with one card, written once", async () => {
    const agent = await boundAgent();
    const requestId = uuid();
    const answers = await Promise.all(Array.from({ length: 6 }, () => ask(agent, { requestId })));
    expect(new Set(answers.map((answer) => answer.cardId)).size).toBe(1);
    expect(answers.filter((answer) => !answer.idempotentReplay)).toHaveLength(1);
    const cardId = answers[0]!.cardId;
    expect(await agentlink.sql("select id from card_audit where card_id = $1", [cardId])).toHaveLength(1);
    expect(await agentlink.sql("select id from outbox where message_id like $1", [`%${cardId}`])).toHaveLength(1);
  });

  it("checks in order: the agent, the replay, the ttl, the category, the person, the trust layer", async () => {
    const agent = await boundAgent();
    const stranger = uuid();
    const bad = {
      ttlSeconds: 5,
      opaqueId: "nobody-of-this-agent",
      proposal: { action: { summary_title: "Pay\u202Eevil", category: "crypto" } },
    };
    const kindOf = async (overrides: Partial<InquireInit>) => {
      const error = await refusal(ask(agent, { ...bad, ...overrides }));
      return [error.code, detailOf(error).code];
    };
    expect(await kindOf({})).toEqual([Code.InvalidArgument, "ttl_below_floor"]);
    expect(await kindOf({ ttlSeconds: 60 })).toEqual([Code.PermissionDenied, "category_not_allowed"]);
    const categoryAllowed = { summary_title: "Pay\u202Eevil", category: "payments" };
    expect(await kindOf({ ttlSeconds: 60, proposal: { action: categoryAllowed } })).toEqual([Code.NotFound, undefined]);
    expect(await kindOf({ ttlSeconds: 60, opaqueId: agent.opaqueId, proposal: { action: categoryAllowed } })).toEqual([
      Code.InvalidArgument,
      "trust_layer_rejected",
    ]);

    const requestId = uuid();
    const first = await ask(agent, { requestId });
    const replay = await ask(agent, { ...bad, requestId, svcUserId: stranger });
    expect([replay.cardId, replay.idempotentReplay]).toEqual([first.cardId, true]);

    await agentlink.console.revokeAgent({ agentId: agent.id });
    const revoked = await refusal(ask(agent, { requestId }));
    expect(revoked.code).toBe(Code.PermissionDenied);
    expect(detailOf(revoked).code).toBeUndefined();
  });

  it("refuses a text over its limit before any other check, with each field's path and limit, storing nothing", async () => {
    const agent = await boundAgent();
    const requestId = uuid();
    const first = await ask(agent, { requestId });
    const overlong = {
      summary_title: "😀".repeat(121),
      category: "c".repeat(81),
      summary_detail: { label: "l".repeat(41), value: "v".repeat(81) },
    };
    // A replay of a queued card's request_id, a ttl out of range and an unknown person: the limits still come first.
    const error = await refusal(
      ask(agent, { requestId, ttlSeconds: 5, opaqueId: "nobody", proposal: { action: overlong } }),
    );
    expect(error.code).toBe(Code.InvalidArgument);
    expect(detailOf(error)).toEqual({
      code: "proposal_field_too_long",
      fields: [
        { path: "/action/summary_title", max_length: 120 },
        { path: "/action/category", max_length: 80 },
        { path: "/action/summary_detail/label", max_length: 40 },
        { path: "/action/summary_detail/value", max_length: 80 },
      ],
    });
    expect(error.rawMessage).toContain("/action/summary_title must be at most 120 characters long");
    // At the limit, counted in code points, the texts pass.
    const atLimit = {
      summary_title: "😀".repeat(120),
      category: "payments",
      summary_detail: { label: "l".repeat(40), value: "v".repeat(80) },
    };
    expect((await ask(agent, { proposal: { action: atLimit } })).status).toBe(CardStatus.QUEUED);
    expect(
      await agentlink.sql("select id from card where agent_id = $1 and request_id = $2", [agent.id, requestId]),
    ).toEqual([{ id: first.cardId }]);
  });

  it("refuses a request_id that is not a uuid, storing nothing", async () => {
    const agent = await boundAgent();
    const error = await refusal(ask(agent, { requestId: "not-a-uuid" }));
    expect(error.code).toBe(Code.InvalidArgument);
    expect(error.rawMessage).toBe("request_id must be a uuid");
    expect(await agentlink.sql("select id from card where agent_id = $1", [agent.id])).toEqual([]);
  });

  it("defaults the ttl to 600 seconds and refuses one outside 60-86400 with the bound", async () => {
    clock.set(start);
    const agent = await boundAgent();
    const answer = await ask(agent);
    expect(timestampDate(answer.ttlAt!)).toEqual(new Date(start.getTime() + 600_000));

    const below = await refusal(ask(agent, { ttlSeconds: 59 }));
    expect(below.code).toBe(Code.InvalidArgument);
    expect(detailOf(below)).toEqual({ code: "ttl_below_floor", min_ttl_seconds: 60 });
    const above = await refusal(ask(agent, { ttlSeconds: 86_401 }));
    expect(above.code).toBe(Code.InvalidArgument);
    expect(detailOf(above)).toEqual({ code: "ttl_above_ceiling", max_ttl_seconds: 86_400 });
    expect((await ask(agent, { ttlSeconds: 86_400 })).status).toBe(CardStatus.QUEUED);
  });

  it("refuses a category the agent was not registered with", async () => {
    const agent = await boundAgent();
    const error = await refusal(ask(agent, { proposal: { action: { ...action, category: "crypto" } } }));
    expect(error.code).toBe(Code.PermissionDenied);
    expect(detailOf(error)).toEqual({ code: "category_not_allowed" });
  });

  it("takes exactly one identifier of the person", async () => {
    const agent = await boundAgent();
    expect((await refusal(ask(agent, { opaqueId: undefined }))).code).toBe(Code.InvalidArgument);
    expect((await refusal(ask(agent, { svcUserId: agent.person }))).code).toBe(Code.InvalidArgument);
  });

  it("finds nobody for another agent's opaque_id or an unbound one", async () => {
    const agent = await boundAgent();
    const other = await boundAgent();
    expect((await refusal(ask(agent, { opaqueId: other.opaqueId }))).code).toBe(Code.NotFound);
    await agentlink.client.unbind({ svcUserId: agent.person, agentId: agent.id });
    expect((await refusal(ask(agent))).code).toBe(Code.NotFound);
  });

  it("answers Unavailable when the svc_user_id or user_email cannot be looked up", async () => {
    const agent = await boundAgent();
    const error = await refusal(ask(agent, { opaqueId: undefined, svcUserId: agent.person }));
    expect(error.code).toBe(Code.Unavailable);
    const email = await refusal(ask(agent, { opaqueId: undefined, userEmail: "someone@example.com" }));
    expect(email.code).toBe(Code.Unavailable);
  });

  it("stores nothing for a card the trust layer rejects, and echoes its violations", async () => {
    const agent = await boundAgent();
    const requestId = uuid();
    const error = await refusal(
      ask(agent, { requestId, proposal: { action: { ...action, summary_title: "Pay\u202Eevil" } } }),
    );
    expect(error.code).toBe(Code.InvalidArgument);
    const detail = detailOf(error);
    expect(detail).toMatchObject({ code: "trust_layer_rejected", status_code: 422, retryable: false });
    expect(detail.violations.length).toBeGreaterThan(0);
    expect(await agentlink.sql("select id from card where request_id = $1", [requestId])).toEqual([]);
  });
});

describe("check-status", () => {
  it("reads the agent's card as queued, then expired once its ttl_at has passed, with nothing resolved yet", async () => {
    clock.set(start);
    const agent = await boundAgent();
    const requestId = uuid();
    const { ttlAt } = await ask(agent, { requestId, ttlSeconds: 60 });
    const queued = await agentlink.client.checkStatus({ caller: agent.caller, requestId });
    expect(queued).toMatchObject({ status: CardStatus.QUEUED, ttlAt, delivered: false, callbackAttempts: 0 });
    expect([queued.resolvedAt, queued.ceremonyId, queued.resolutionJwt, queued.verdict]).toEqual([
      undefined,
      undefined,
      undefined,
      undefined,
    ]);

    clock.set(new Date(start.getTime() + 59_999));
    expect((await agentlink.client.checkStatus({ caller: agent.caller, requestId })).status).toBe(CardStatus.QUEUED);
    clock.set(new Date(start.getTime() + 60_000));
    const expired = await agentlink.client.checkStatus({ caller: agent.caller, requestId });
    expect([expired.status, expired.resolvedAt]).toEqual([CardStatus.EXPIRED, ttlAt]);
    clock.set(start);
  });

  it("finds no card of another agent, nor an unknown request_id", async () => {
    const agent = await boundAgent();
    const other = await boundAgent();
    const requestId = uuid();
    await ask(agent, { requestId });
    const notOurs = await refusal(agentlink.client.checkStatus({ caller: other.caller, requestId }));
    expect(notOurs.code).toBe(Code.NotFound);
    const unknown = await refusal(agentlink.client.checkStatus({ caller: agent.caller, requestId: uuid() }));
    expect(unknown.code).toBe(Code.NotFound);
  });

  it("answers each read of a concurrent burst as it would alone, also when reads share a statement", async () => {
    clock.set(start);
    const agent = await boundAgent();
    const other = await boundAgent();
    const cards = await Promise.all(
      Array.from({ length: 6 }, async () => {
        const requestId = uuid();
        return { requestId, cardId: (await ask(agent, { requestId })).cardId };
      }),
    );
    const cancelled = cards[0]!;
    await agentlink.client.cancel({ caller: agent.caller, requestId: cancelled.requestId });

    const reads: { requestId: string; caller?: Caller; missing?: true }[] = [
      ...cards.flatMap((card) => [card.requestId, card.requestId.toUpperCase()]).map((requestId) => ({ requestId })),
      { requestId: uuid(), missing: true },
      { requestId: "not-a-uuid", missing: true },
      { requestId: cards[1]!.requestId, caller: other.caller, missing: true },
    ];
    const answers = await Promise.all(
      Array.from({ length: 20 }, () => reads)
        .flat()
        .map(async (read) => {
          const asked = agentlink.client.checkStatus({
            caller: read.caller ?? agent.caller,
            requestId: read.requestId,
          });
          return { read, answer: read.missing ? (await refusal(asked)).code : await asked };
        }),
    );
    for (const { read, answer } of answers) {
      if (read.missing) {
        expect(answer).toBe(Code.NotFound);
        continue;
      }
      const card = cards.find((c) => c.requestId === read.requestId.toLowerCase())!;
      expect(answer).toMatchObject({
        cardId: card.cardId,
        status: card === cancelled ? CardStatus.CANCELLED : CardStatus.QUEUED,
      });
    }
  });
});

describe("CheckStatuses (the gateway's batched reads)", () => {
  it("answers each read in order as CheckStatus would, a missing card as not_found", async () => {
    clock.set(start);
    const agent = await boundAgent();
    const other = await boundAgent();
    const requestId = uuid();
    await ask(agent, { requestId });
    const reads = [
      { caller: agent.caller, requestId },
      { caller: other.caller, requestId },
      { caller: agent.caller, requestId: "not-a-uuid" },
      { caller: agent.caller, requestId: requestId.toUpperCase() },
    ];
    const { results } = await agentlink.client.checkStatuses({ reads });
    const single = await agentlink.client.checkStatus({ caller: agent.caller, requestId });
    expect(results.map((result) => result.outcome)).toEqual([
      { case: "answer", value: single },
      { case: "notFound", value: "no proposal with that request_id for this agent" },
      { case: "notFound", value: "no proposal with that request_id for this agent" },
      { case: "answer", value: single },
    ]);
  });

  it("takes at most 1000 reads per call", async () => {
    const agent = await boundAgent();
    const reads = Array.from({ length: 1001 }, () => ({ caller: agent.caller, requestId: uuid() }));
    expect((await refusal(agentlink.client.checkStatuses({ reads }))).code).toBe(Code.InvalidArgument);
    const { results } = await agentlink.client.checkStatuses({ reads: reads.slice(0, 1000) });
    expect(results.filter((result) => result.outcome.case === "notFound")).toHaveLength(1000);
  });
});

describe("cancel", () => {
  it("cancels a queued card once, with its reason in the audit log, and answers later cancels as resolved", async () => {
    clock.set(start);
    const agent = await boundAgent();
    const requestId = uuid();
    const { cardId } = await ask(agent, { requestId });
    clock.set(new Date(start.getTime() + 5_000));
    const cancelled = await agentlink.client.cancel({
      caller: agent.caller,
      requestId,
      reason: "customer changed mind",
    });
    const at = new Date(start.getTime() + 5_000);
    expect(cancelled).toMatchObject({ status: CardStatus.CANCELLED, cardId, alreadyResolved: false });
    expect(timestampDate(cancelled.cancelledAt!)).toEqual(at);
    const audit = await agentlink.sql(
      "select action, actor, at, detail from card_audit where card_id = $1 order by id",
      [cardId],
    );
    expect(audit.at(-1)).toEqual({
      action: "card.cancelled",
      actor: `agent:${agent.id}`,
      at,
      detail: { reason: "customer changed mind" },
    });

    clock.set(new Date(start.getTime() + 9_000));
    const again = await agentlink.client.cancel({ caller: agent.caller, requestId });
    expect(again).toMatchObject({ status: CardStatus.CANCELLED, cardId, alreadyResolved: true });
    expect(timestampDate(again.cancelledAt!)).toEqual(at);
    expect(await agentlink.sql("select id from card_audit where card_id = $1", [cardId])).toHaveLength(2);
    const events = await agentlink.sql("select message_id from outbox where message_id like $1", [`%${cardId}`]);
    expect(events).toEqual([{ message_id: `agents_ask.card.proposed:${cardId}` }]);
    expect((await agentlink.client.checkStatus({ caller: agent.caller, requestId })).status).toBe(CardStatus.CANCELLED);
    clock.set(start);
  });

  it("changes nothing on a card past its ttl_at, and refuses a reason over 200 characters or another agent's card", async () => {
    clock.set(start);
    const agent = await boundAgent();
    const requestId = uuid();
    await ask(agent, { requestId, ttlSeconds: 60 });
    const long = await refusal(agentlink.client.cancel({ caller: agent.caller, requestId, reason: "x".repeat(201) }));
    expect(long.code).toBe(Code.InvalidArgument);
    const other = await boundAgent();
    expect((await refusal(agentlink.client.cancel({ caller: other.caller, requestId }))).code).toBe(Code.NotFound);

    clock.set(new Date(start.getTime() + 60_000));
    const late = await agentlink.client.cancel({ caller: agent.caller, requestId });
    expect([late.status, late.alreadyResolved, late.cancelledAt]).toEqual([CardStatus.EXPIRED, true, undefined]);
    const [row] = await agentlink.sql("select status from card where request_id = $1", [requestId]);
    expect(row).toEqual({ status: "queued" });
    clock.set(start);
  });
});

describe("the expire sweep", () => {
  it("expires queued cards past ttl_at only, with card.expired and agents_ask.resolution.expired, once", async () => {
    clock.set(start);
    const agent = await boundAgent();
    const short = await ask(agent, { ttlSeconds: 60 });
    const long = await ask(agent, { ttlSeconds: 3600 });
    const cancelledId = uuid();
    const cancelled = await ask(agent, { requestId: cancelledId, ttlSeconds: 60 });
    await agentlink.client.cancel({ caller: agent.caller, requestId: cancelledId });

    const sweptAt = new Date(start.getTime() + 60_000);
    clock.set(sweptAt);
    // Other tests' cards may be due as well: this one's outcome is read from its own rows.
    expect((await agentlink.console.expire({ limit: 1000 })).expiredCount).toBeGreaterThanOrEqual(1);
    const rows = await agentlink.sql<{ id: string; status: string; resolved_at: Date | null }>(
      "select id, status, resolved_at from card where id = any($1)",
      [[short.cardId, long.cardId, cancelled.cardId]],
    );
    expect(Object.fromEntries(rows.map((r) => [r.id, [r.status, r.resolved_at]]))).toEqual({
      [short.cardId]: ["expired", timestampDate(short.ttlAt!)],
      [long.cardId]: ["queued", null],
      [cancelled.cardId]: ["cancelled", start],
    });
    const audit = await agentlink.sql("select action, actor, at from card_audit where card_id = $1 order by id", [
      short.cardId,
    ]);
    expect(audit.at(-1)).toEqual({ action: "card.expired", actor: "sweep", at: sweptAt });
    const [row] = await agentlink.sql<{ payload: Buffer }>("select payload from outbox where message_id = $1", [
      `agents_ask.resolution.expired:${short.cardId}`,
    ]);
    const event = fromBinary(EventSchema, row!.payload);
    expect(event.payload.case).toBe("agentsAskResolutionExpired");
    expect(event.payload.value).toMatchObject({
      requestId: (await agentlink.sql("select request_id from card where id = $1", [short.cardId]))[0]?.request_id,
      cardId: short.cardId,
      outcome: "expired",
      metadata: { agentId: agent.id, agentName: agent.name, summaryTitle: action.summary_title },
    });

    expect((await agentlink.console.expire({})).expiredCount).toBe(0);
    expect(
      await agentlink.sql("select id from outbox where message_id like $1", [`%expired:${short.cardId}`]),
    ).toHaveLength(1);
    clock.set(start);
  });

  it("takes a limit of 1-1000", async () => {
    expect((await refusal(agentlink.console.expire({ limit: 0 }))).code).toBe(Code.InvalidArgument);
    expect((await refusal(agentlink.console.expire({ limit: 1001 }))).code).toBe(Code.InvalidArgument);
  });
});

describe("a card's audit log (GetCardAudit)", () => {
  const entriesOf = (audit: Awaited<ReturnType<typeof agentlink.console.getCardAudit>>) =>
    audit.entries.map((entry) => ({
      action: entry.action,
      actor: entry.actor,
      at: timestampDate(entry.at!),
      detail: entry.detail,
    }));

  it("reads the card with its state changes oldest first: proposed by the agent, cancelled with the reason", async () => {
    clock.set(start);
    const agent = await boundAgent();
    const requestId = uuid();
    const { cardId } = await ask(agent, { requestId });
    clock.set(new Date(start.getTime() + 5_000));
    await agentlink.client.cancel({ caller: agent.caller, requestId, reason: "paid by phone" });

    const audit = await agentlink.console.getCardAudit({ cardId });
    expect([audit.cardId, audit.agentId, audit.requestId, audit.status]).toEqual([
      cardId,
      agent.id,
      requestId,
      CardStatus.CANCELLED,
    ]);
    expect(entriesOf(audit)).toEqual([
      { action: "card.proposed", actor: `agent:${agent.id}`, at: start, detail: undefined },
      {
        action: "card.cancelled",
        actor: `agent:${agent.id}`,
        at: new Date(start.getTime() + 5_000),
        detail: { reason: "paid by phone" },
      },
    ]);
    clock.set(start);
  });

  it("reads a card past ttl_at as expired before the sweep, and the sweep's card.expired after it", async () => {
    clock.set(start);
    const agent = await boundAgent();
    const { cardId } = await ask(agent, { ttlSeconds: 60 });
    const sweptAt = new Date(start.getTime() + 60_000);
    clock.set(sweptAt);
    const before = await agentlink.console.getCardAudit({ cardId });
    expect(before.status).toBe(CardStatus.EXPIRED);
    expect(entriesOf(before).map((entry) => entry.action)).toEqual(["card.proposed"]);

    await agentlink.console.expire({ limit: 1000 });
    const after = await agentlink.console.getCardAudit({ cardId });
    expect(entriesOf(after).at(-1)).toEqual({ action: "card.expired", actor: "sweep", at: sweptAt, detail: undefined });
    clock.set(start);
  });

  it("reads every action written, not only the ones it knows, ordered by when they happened", async () => {
    clock.set(start);
    const agent = await boundAgent();
    const { cardId } = await ask(agent);
    // A later state change (a person's confirmation) written before this reader knew of it, with an earlier
    // row written after it: order is by `at`.
    await agentlink.sql(
      "insert into card_audit (card_id, action, actor, at, detail) values ($1, $2, $3, $4, $5), ($1, $6, $7, $8, null)",
      [
        cardId,
        "card.approved",
        `human:${agent.person}`,
        new Date(start.getTime() + 30_000),
        JSON.stringify({ ceremony_id: "c-1" }),
        "card.viewed",
        `human:${agent.person}`,
        new Date(start.getTime() + 10_000),
      ],
    );
    const audit = await agentlink.console.getCardAudit({ cardId });
    expect(entriesOf(audit).map(({ action, actor, detail }) => [action, actor, detail])).toEqual([
      ["card.proposed", `agent:${agent.id}`, undefined],
      ["card.viewed", `human:${agent.person}`, undefined],
      ["card.approved", `human:${agent.person}`, { ceremony_id: "c-1" }],
    ]);
  });

  it("refuses a card id that is not a uuid, and finds no unknown card", async () => {
    expect((await refusal(agentlink.console.getCardAudit({ cardId: "card-1" }))).code).toBe(Code.InvalidArgument);
    expect((await refusal(agentlink.console.getCardAudit({ cardId: uuid() }))).code).toBe(Code.NotFound);
  });
});

describe("the card notifications (core NATS, for the gateway's long-polls)", () => {
  let nc: NatsConnection;
  const heard: CardLeftQueue[] = [];
  const heardFor = (requestId: string) => heard.filter((n) => n.requestId === requestId);
  /** What the notification of a card must be: its agent, its request_id and its CheckStatus answer. */
  const notification = async (agent: BoundAgent, requestId: string) => ({
    $typeName: "svc.agentlink.v1.CardLeftQueue",
    agentId: agent.id,
    requestId,
    answer: await agentlink.client.checkStatus({ caller: agent.caller, requestId }),
  });

  beforeAll(async () => {
    nc = await connectNats({ url: agentlink.env.SVC_NATS_URL!, name: "cards-test" });
    const subject = notificationSubject(agentlink.env.SVC_EVENT_SUBJECT_PREFIX!, "agentlink.card_left_queue");
    nc.subscribe(subject, {
      callback: (_error, message) => {
        heard.push(fromBinary(CardLeftQueueSchema, message.data));
      },
    });
    await nc.flush();
  });
  afterAll(async () => {
    await nc?.close();
  });

  it("tells of a cancelled card once, with its answer: a cancel of a card no longer queued tells nothing", async () => {
    clock.set(start);
    const agent = await boundAgent();
    const [first, second] = [uuid(), uuid()];
    await ask(agent, { requestId: first });
    await ask(agent, { requestId: second });
    await agentlink.client.cancel({ caller: agent.caller, requestId: first });
    await expect.poll(() => heardFor(first)).toHaveLength(1);
    expect(heardFor(first)).toEqual([await notification(agent, first)]);
    expect(heardFor(first)[0]?.answer?.status).toBe(CardStatus.CANCELLED);
    await agentlink.client.cancel({ caller: agent.caller, requestId: first });
    // One connection publishes in order: once the second card's is heard, a repeat for the first would have been.
    await agentlink.client.cancel({ caller: agent.caller, requestId: second });
    await expect.poll(() => heardFor(second)).toHaveLength(1);
    expect(heardFor(first)).toHaveLength(1);
  });

  it("tells of every card the expire sweep expires, and of no card still queued", async () => {
    clock.set(start);
    const agent = await boundAgent();
    const [due, notDue] = [uuid(), uuid()];
    await ask(agent, { requestId: due, ttlSeconds: 60 });
    await ask(agent, { requestId: notDue, ttlSeconds: 3600 });
    clock.set(new Date(start.getTime() + 60_000));
    await agentlink.console.expire({ limit: 1000 });
    await expect.poll(() => heardFor(due)).toHaveLength(1);
    expect(heardFor(due)).toEqual([await notification(agent, due)]);
    expect(heardFor(due)[0]?.answer?.status).toBe(CardStatus.EXPIRED);
    expect(heardFor(notDue)).toEqual([]);
    clock.set(start);
  });
});
