import { createSecretKey } from "node:crypto";
import { type CommittedEvent, outboxRow, personlessPushTriggerRow, systemClock, uuid } from "@svc/platform";
import { PushKind } from "@svc/proto/account/v1/account_pb.js";
import { Environment } from "@svc/proto/common/v1/caller_pb.js";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { uniqueName } from "../../../test/harness/index.ts";
import { opaqueIdLookup } from "../src/binding/opaque-id.ts";
import { CardWriter, type Proposal } from "../src/proposals/card-writer.ts";
import { opaqueIdKey, startTestAgentlink, type TestAgentlink } from "./support/agentlink.ts";

let agentlink: TestAgentlink;
let pool: pg.Pool;

beforeAll(async () => {
  agentlink = await startTestAgentlink("agentlink_card_writer", { clock: systemClock });
  pool = new pg.Pool({ connectionString: agentlink.database.url, options: "-c search_path=agentlink", max: 4 });
});
afterAll(async () => {
  await pool?.end();
  await agentlink?.stop();
});

/** A registered agent bound to a new person: what a proposal names. */
async function boundAgent() {
  const registered = await agentlink.console.registerAgent({
    organizationId: uniqueName("org"),
    environment: Environment.DEVELOPMENT,
    name: uniqueName("bot").slice(0, 40),
    categories: ["payments"],
  });
  const { caller } = await agentlink.client.authenticateAgentKey({ agentKey: registered.agentKey });
  const { linkCode } = await agentlink.client.startBindSession({ caller });
  const person = uuid();
  await agentlink.client.claimLinkCode({ svcUserId: person, linkCode });
  const { opaqueId } = await agentlink.client.checkBinding({ caller, linkCode });
  return { id: registered.agent!.agentId, person, lookup: opaqueIdLookup(createSecretKey(opaqueIdKey), opaqueId!) };
}

/** Until a statement of propose_cards waits for a row lock (another transaction's insert of the same key). */
async function untilWaitingForLock(): Promise<void> {
  for (let attempt = 0; attempt < 500; attempt++) {
    const waiting = await agentlink.sql(
      "select pid from pg_stat_activity where wait_event_type = 'Lock' and query like '%propose_cards(%'",
    );
    if (waiting.length > 0) return;
    await new Promise((resolve) => setImmediate(resolve));
  }
  throw new Error("no propose_cards statement came to wait for the lock");
}

/** A call every check allows, carrying its new card. */
function proposal(agent: { id: string; lookup: string }, requestId: string, status = "queued"): Proposal {
  const now = new Date();
  const id = uuid();
  return {
    agentId: agent.id,
    requestId,
    opaqueIdLookup: agent.lookup,
    svcUserId: null,
    quorum: null,
    category: "payments",
    newCard: {
      card: {
        id,
        agentId: agent.id,
        requestId,
        summaryTitle: "Pay invoice 7",
        category: "payments",
        canonicalCard: "{}",
        cardDigest: "digest",
        status: status as "queued",
        ttlAt: new Date(now.getTime() + 600_000),
        createdAt: now,
        namedBy: "opaque_id",
        warnings: [],
        sandboxAnswerAt: null,
      },
      audit: { action: "card.proposed", actor: `agent:${agent.id}`, at: now, detail: null },
      event: outboxRow(
        systemClock,
        { type: "agents_ask.card.proposed", messageId: `agents_ask.card.proposed:${id}`, payload: new Uint8Array([1]) },
        { subject: (type) => `test.${type}` },
      ),
      push: personlessPushTriggerRow(
        systemClock,
        { subjectPrefix: "test" },
        { kind: PushKind.AGENT_CARD, itemId: id, title: "An agent asks", expiresAt: new Date(now.getTime() + 600_000) },
      ),
    },
  };
}

describe("propose_cards", () => {
  it("answers a card another connection commits meanwhile as a replay, writing nothing of its own", async () => {
    const agent = await boundAgent();
    const requestId = uuid();
    const first = proposal(agent, requestId);
    let written: CommittedEvent[] = [];
    const client = await pool.connect();
    try {
      await client.query("begin");
      const winner = await new CardWriter(client).propose(first);
      expect([winner.written, winner.card?.svcUserId]).toEqual([true, agent.person]);
      // The second call's facts see no card, and its insert waits for the first transaction.
      const second = new CardWriter(pool).propose(proposal(agent, requestId));
      await untilWaitingForLock();
      await client.query("commit");
      const answer = await second;
      expect([answer.written, answer.card?.id]).toEqual([false, first.newCard!.card.id]);
      // The replay hands the relay nothing; the card's writer hands it the card's event and its push trigger.
      expect(answer.events).toEqual([]);
      written = winner.events;
    } finally {
      client.release();
    }
    const cards = await agentlink.sql<{ id: string }>("select id from card where request_id = $1", [requestId]);
    expect(cards).toEqual([{ id: first.newCard!.card.id }]);
    expect(
      await agentlink.sql("select id from outbox where subject = $1 and message_id like $2", [
        "test.agents_ask.card.proposed",
        `%${first.newCard!.card.id}`,
      ]),
    ).toHaveLength(1);
    const rows = await agentlink.sql<{ id: string; subject: string; message_id: string; payload: Buffer }>(
      "select id::text, subject, message_id, payload from outbox where message_id like $1 order by message_id",
      [`%${first.newCard!.card.id}%`],
    );
    expect(rows.map((row) => row.message_id)).toEqual([
      `agents_ask.card.proposed:${first.newCard!.card.id}`,
      `push:${first.newCard!.card.id}:${agent.person}`,
    ]);
    expect([...written].sort((a, b) => a.messageId.localeCompare(b.messageId))).toEqual(
      rows.map((row) => ({
        id: row.id,
        subject: row.subject,
        messageId: row.message_id,
        payload: row.payload,
        traceContext: null,
      })),
    );
  });

  it("writes the rest of a batch when one card of it fails", async () => {
    const agent = await boundAgent();
    const writer = new CardWriter(pool);
    const [good, bad, alsoGood] = [uuid(), uuid(), uuid()];
    const answers = await Promise.allSettled([
      writer.propose(proposal(agent, good)),
      writer.propose(proposal(agent, bad, "no such status")),
      writer.propose(proposal(agent, alsoGood)),
    ]);
    expect(answers.map((answer) => answer.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    const written = await agentlink.sql<{ request_id: string }>("select request_id from card where agent_id = $1", [
      agent.id,
    ]);
    expect(written.map((row) => row.request_id).sort()).toEqual([good, alsoGood].sort());
  });

  it("writes nothing, and says why, when the agent is revoked or the binding ended", async () => {
    const agent = await boundAgent();
    const writer = new CardWriter(pool);
    await agentlink.client.unbind({ svcUserId: agent.person, agentId: agent.id });
    const unbound = await writer.propose(proposal(agent, uuid()));
    expect(unbound).toMatchObject({ agentActive: true, categoryAllowed: true, person: null, written: false });
    await agentlink.console.revokeAgent({ agentId: agent.id });
    const revoked = await writer.propose({ ...proposal(agent, uuid()), opaqueIdLookup: null, svcUserId: agent.person });
    expect(revoked).toMatchObject({ agentActive: false, written: false, card: undefined });
    expect(await agentlink.sql("select id from card where agent_id = $1", [agent.id])).toEqual([]);
  });
});
