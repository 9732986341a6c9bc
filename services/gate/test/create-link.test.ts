import { randomUUID } from "node:crypto";
import type { MikroORM } from "@mikro-orm/postgresql";
import {
  createLogger,
  ManualClock,
  OutboxEvent,
  openDatabase,
  openStatementPool,
  outboxMigrations,
} from "@svc/platform";
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../../../test/harness/index.ts";
import { sandboxFastPathMs } from "../src/ceremony/sandbox.ts";
import { GateFactsLookup } from "../src/gates/gate-facts.ts";
import { GateStore } from "../src/gates/gate-store.ts";
import { migrations } from "../src/migrations/index.ts";
import { partnerRefs } from "../src/partner-refs.ts";
import { createLink, type HumanFacts, type LinkInput } from "../src/requests/create-link.ts";
import { IdempotentCreates } from "../src/requests/idempotent-creates.ts";
import { createVerificationRequests, type NewRequest, RequestWriter } from "../src/requests/request-writer.ts";
import { SessionFactsLookup } from "../src/sessions/session-facts.ts";
import { SessionStore } from "../src/sessions/session-store.ts";

/**
 * The batched create path against real PostgreSQL, as two replicas would run it: each with its
 * own remembered facts, so one of them reads what the other wrote. Everything that can change (the
 * token's use, the gate's status) must come from the database, never from what a replica remembers.
 */
const logger = createLogger("test", {}, "warn");
const organizationId = "5d0f7a8e-0b4c-4f3e-9a51-6c2d8e1f3a90";
const keyCaller = {
  organizationId,
  environment: "development" as const,
  credentialId: "key-1",
  kind: "secret_key" as const,
};
const input = (gate: string, more: Partial<LinkInput> = {}): LinkInput => ({
  gate,
  returnUrl: "",
  mode: "",
  svcUserId: "",
  partnerUserRef: "",
  parentRequestId: "",
  metadata: undefined,
  notarize: false,
  idempotencyToken: "",
  ...more,
});

let database: TestDatabase;
let orm: MikroORM;
let statements: pg.Pool;
const clock = new ManualClock(new Date("2026-11-22T10:00:00Z"));
const refs = partnerRefs(Buffer.alloc(32, 7));

const replica = () => {
  const sessionFacts = new SessionFactsLookup(statements);
  const writer = new RequestWriter(statements);
  return {
    sessions: new SessionStore({ db: statements, clock, refs, facts: sessionFacts }),
    writer,
    link: (sessionId: string, linkInput: LinkInput, human: HumanFacts = { devices: 0 }) =>
      createLink(
        {
          writer,
          sessions: sessionFacts,
          gates: new GateFactsLookup(statements),
          clock,
          bus: { subjectPrefix: "svc" },
          refs,
          presenceWindowMs: 600_000,
          idempotent: new IdempotentCreates({ db: statements, refs, gates: new GateFactsLookup(statements) }),
        },
        { ...keyCaller, credentialId: sessionId, kind: "grant_token" },
        linkInput,
        human,
      ),
  };
};

beforeAll(async () => {
  database = await createTestDatabase("gate-create-link");
  orm = await openDatabase({
    url: database.url,
    schema: "gate",
    entities: [OutboxEvent],
    migrations: [...outboxMigrations, ...migrations],
    storedDefinitions: [createVerificationRequests],
    logger,
  });
  statements = openStatementPool({ url: database.url, schema: "gate", max: 16, logger });
  const gates = new GateStore({ orm, clock });
  await gates.create({
    organizationId,
    environment: "development",
    key: "checkout",
    type: "human",
    ageThreshold: undefined,
    status: "active",
    notarizeOffer: false,
  });
  await gates.create({
    organizationId,
    environment: "development",
    key: "bar",
    type: "age",
    ageThreshold: 21,
    status: "active",
    notarizeOffer: false,
  });
});

afterAll(async () => {
  await statements?.end();
  await orm?.close();
  await database?.drop();
});

describe("create-verification-link with an idempotency token (the gateway's scoped Idempotency-Key)", () => {
  it("a retry with the token gets the request the first call made, flow secret included; without it the token is used", async () => {
    const node = replica();
    const session = await node.sessions.create(keyCaller, { partnerUserId: "", metadata: undefined, allowedGates: [] });
    const { id } = await node.sessions.authenticate(session.token);
    const first = await node.link(id, input("checkout", { idempotencyToken: "token-a" }));

    // The retry comes to another replica, after the token was consumed: authenticating it needs the same token.
    const other = replica();
    await expect(other.sessions.authenticate(session.token)).rejects.toThrow(/already used/);
    await expect(other.sessions.authenticate(session.token, "token-b")).rejects.toThrow(/already used/);
    expect((await other.sessions.authenticate(session.token, "token-a")).id).toBe(id);
    const again = await other.link(id, input("checkout", { idempotencyToken: "token-a" }));
    expect(again).toEqual(first);
    await expect(other.link(id, input("checkout", { idempotencyToken: "token-b" }))).rejects.toThrow(/already used/);
    await expect(other.link(id, input("checkout"))).rejects.toThrow(/already used/);
    const { rows } = await statements.query(`select count(*)::int as n from requests where session_id = $1`, [id]);
    expect(rows[0].n).toBe(1);
  });

  it("keeps no sealed flow secret and accepts no retry for a create without a token", async () => {
    const node = replica();
    const session = await node.sessions.create(keyCaller, { partnerUserId: "", metadata: undefined, allowedGates: [] });
    const { id } = await node.sessions.authenticate(session.token);
    await node.link(id, input("checkout"));
    const { rows } = await statements.query(
      `select idempotency_token_hash, flow_secret_sealed from sessions where id = $1`,
      [id],
    );
    expect(rows[0]).toEqual({ idempotency_token_hash: null, flow_secret_sealed: null });
    await expect(node.sessions.authenticate(session.token, "token-a")).rejects.toThrow(/already used/);
  });
});

describe("create-verification-link naming a person", () => {
  it("returns the push trigger it committed with its outbox id, for the relay to publish at once; a retry's answer returns none", async () => {
    const node = replica();
    const session = await node.sessions.create(keyCaller, { partnerUserId: "", metadata: undefined, allowedGates: [] });
    const { id } = await node.sessions.authenticate(session.token);
    const svcUserId = randomUUID();
    const created = await node.link(id, input("checkout", { svcUserId, idempotencyToken: "token-p" }), { devices: 1 });
    const { rows } = await statements.query(
      `select id::text, subject, message_id, payload, trace_context from outbox where message_id = $1`,
      [`push:${created.requestId}:${svcUserId}`],
    );
    expect(rows).toHaveLength(1);
    expect(created.pushEvent).toEqual({
      id: rows[0].id,
      subject: rows[0].subject,
      messageId: rows[0].message_id,
      payload: rows[0].payload,
      traceContext: rows[0].trace_context,
    });
    const again = await node.link(id, input("checkout", { svcUserId, idempotencyToken: "token-p" }), { devices: 1 });
    expect(again).toEqual({ ...created, pushEvent: null });
  });
});

describe("create-verification-link for a sandbox human", () => {
  it("records with the request how the sandbox human answers and when the sandbox sweep may answer; anyone else's records neither", async () => {
    const node = replica();
    const link = async (human: HumanFacts) => {
      const session = await node.sessions.create(keyCaller, {
        partnerUserId: "",
        metadata: undefined,
        allowedGates: [],
      });
      const { id } = await node.sessions.authenticate(session.token);
      const created = await node.link(id, input("checkout", { svcUserId: randomUUID() }), human);
      const { rows } = await statements.query(
        `select sandbox_behavior, sandbox_answer_at from requests where id = $1`,
        [created.requestId],
      );
      return rows[0];
    };
    expect(await link({ devices: 0, sandbox: "decline" })).toEqual({
      sandbox_behavior: "decline",
      sandbox_answer_at: new Date(clock.now().getTime() + sandboxFastPathMs),
    });
    expect(await link({ devices: 0 })).toEqual({ sandbox_behavior: null, sandbox_answer_at: null });
  });
});

describe("create-verification-link, one statement per batch of calls", () => {
  it("creates on a replica that never saw the session, then refuses the used token", async () => {
    const session = await replica().sessions.create(keyCaller, {
      partnerUserId: "",
      metadata: { plan: "pro" },
      allowedGates: [],
    });
    const { id } = await replica().sessions.authenticate(session.token);
    const other = replica();
    const created = await other.link(id, input("bar"));
    expect(created).toMatchObject({
      status: "pending",
      sdkType: "signal",
      authMode: "private",
      gate: { key: "bar", type: "age", ageThreshold: 21 },
    });
    const [row] = (
      await statements.query(
        `select status, gate_type, age_threshold, metadata, session_id from requests where id = $1`,
        [created.requestId],
      )
    ).rows;
    expect(row).toEqual({
      status: "pending",
      gate_type: "age",
      age_threshold: 21,
      metadata: { plan: "pro" },
      session_id: id,
    });
    await expect(other.link(id, input("bar"))).rejects.toMatchObject({ kind: "unauthenticated" });
  });

  it("takes a token this replica issued from memory, and still refuses it once used, revoked or expired", async () => {
    const node = replica();
    const issue = () => node.sessions.create(keyCaller, { partnerUserId: "", metadata: undefined, allowedGates: [] });
    const consumedAt = (id: string) =>
      statements.query(`select consumed_at from sessions where id = $1`, [id]).then((r) => r.rows[0].consumed_at);

    const used = await issue();
    const { id: usedId } = await node.sessions.forCreate(used.token, "");
    await node.link(usedId, input("checkout"));
    expect((await node.sessions.forCreate(used.token, "")).id).toBe(usedId);
    await expect(node.link(usedId, input("checkout"))).rejects.toMatchObject({ kind: "unauthenticated" });

    const revoked = await issue();
    expect(await node.sessions.revoke(keyCaller, revoked.token)).toBe(true);
    const { id: revokedId } = await node.sessions.forCreate(revoked.token, "");
    await expect(node.link(revokedId, input("checkout"))).rejects.toMatchObject({ kind: "unauthenticated" });
    expect(await consumedAt(revokedId)).toBeNull();

    const expiring = await issue();
    const { id: expiringId } = await node.sessions.forCreate(expiring.token, "");
    clock.advance(expiring.expiresAt.getTime() - clock.now().getTime());
    await expect(node.link(expiringId, input("checkout"))).rejects.toMatchObject({ kind: "unauthenticated" });
    expect(await consumedAt(expiringId)).toBeNull();

    // A token this replica never issued nor saw is authenticated by a statement, and refused there.
    await expect(replica().sessions.forCreate(used.token, "")).rejects.toMatchObject({ kind: "unauthenticated" });
  });

  it("reads the gate's status from the database, not from a remembered gate", async () => {
    const node = replica();
    const first = await node.sessions.create(keyCaller, { partnerUserId: "", metadata: undefined, allowedGates: [] });
    await node.link((await node.sessions.authenticate(first.token)).id, input("checkout"));
    await new GateStore({ orm, clock }).setStatus(organizationId, "development", "checkout", "archived");
    try {
      const second = await node.sessions.create(keyCaller, {
        partnerUserId: "",
        metadata: undefined,
        allowedGates: [],
      });
      const { id } = await node.sessions.authenticate(second.token);
      await expect(node.link(id, input("checkout"))).rejects.toMatchObject({ kind: "invalid" });
      // The refusal consumed nothing: the token still authenticates.
      await expect(node.sessions.authenticate(second.token)).resolves.toMatchObject({ id });
    } finally {
      await new GateStore({ orm, clock }).setStatus(organizationId, "development", "checkout", "active");
    }
  });

  it("reads the notarize offer from the database for each request that asks for it, not from a remembered gate", async () => {
    const sessionFacts = new SessionFactsLookup(statements);
    const sessions = new SessionStore({ db: statements, clock, refs, facts: sessionFacts });
    // One lookup for every call, as in a running replica: the gate's facts are remembered after the first.
    const gates = new GateFactsLookup(statements);
    const deps = {
      writer: new RequestWriter(statements),
      sessions: sessionFacts,
      gates,
      clock,
      bus: { subjectPrefix: "svc" },
      refs,
      presenceWindowMs: 600_000,
      idempotent: new IdempotentCreates({ db: statements, refs, gates }),
    };
    const offered = async (more: Partial<LinkInput>) => {
      const session = await sessions.create(keyCaller, { partnerUserId: "", metadata: undefined, allowedGates: [] });
      const { id } = await sessions.authenticate(session.token);
      const caller = { ...keyCaller, credentialId: id, kind: "grant_token" as const };
      return (await createLink(deps, caller, input("checkout", { notarize: true, ...more }), { devices: 0 }))
        .notarizeOffered;
    };
    const store = new GateStore({ orm, clock });
    expect(await offered({ partnerUserRef: "user-n1" })).toBe(false);
    expect(await store.setNotarizeOffer(organizationId, "development", "checkout", true)).toMatchObject({
      key: "checkout",
      notarizeOffer: true,
    });
    try {
      expect(await offered({ partnerUserRef: "user-n2" })).toBe(true);
      // Without a partner reference there is no account to secure.
      expect(await offered({})).toBe(false);
      expect(await offered({ partnerUserRef: "user-n3", notarize: false })).toBe(false);
    } finally {
      await store.setNotarizeOffer(organizationId, "development", "checkout", false);
    }
    expect(await offered({ partnerUserRef: "user-n4" })).toBe(false);
    await expect(store.setNotarizeOffer(organizationId, "production", "checkout", true)).rejects.toMatchObject({
      kind: "not_found",
    });
  });

  it("refuses in the operation's order and consumes nothing when it refuses", async () => {
    const node = replica();
    const restricted = await node.sessions.create(keyCaller, {
      partnerUserId: "user-9",
      metadata: undefined,
      allowedGates: ["bar"],
    });
    const { id } = await node.sessions.authenticate(restricted.token);
    await expect(node.link(id, input("nope"))).rejects.toMatchObject({ kind: "invalid" });
    await expect(node.link(id, input("checkout"))).rejects.toMatchObject({ kind: "forbidden" });
    await node.link(id, input("bar"));

    const again = await node.sessions.create(keyCaller, {
      partnerUserId: "user-9",
      metadata: undefined,
      allowedGates: [],
    });
    const second = await node.sessions.authenticate(again.token);
    await expect(node.link(second.id, input("bar"))).rejects.toMatchObject({ kind: "conflict" });
    await expect(node.sessions.authenticate(again.token)).resolves.toMatchObject({ id: second.id });
    // A used token is refused as such before any other rule is looked at.
    await expect(node.link(id, input("nope"))).rejects.toMatchObject({ kind: "unauthenticated" });
  });

  it("accepts exactly one of 16 concurrent calls with one token", async () => {
    const node = replica();
    const session = await node.sessions.create(keyCaller, { partnerUserId: "", metadata: undefined, allowedGates: [] });
    const { id } = await node.sessions.authenticate(session.token);
    const outcomes = await Promise.allSettled(Array.from({ length: 16 }, () => replica().link(id, input("checkout"))));
    expect(outcomes.filter((o) => o.status === "fulfilled")).toHaveLength(1);
    expect(
      outcomes.filter((o) => o.status === "rejected").map((o) => (o as PromiseRejectedResult).reason.kind),
    ).toEqual(Array(15).fill("unauthenticated"));
    const { rows } = await statements.query(`select count(*)::int as n from requests where session_id = $1`, [id]);
    expect(rows[0].n).toBe(1);
  });

  it("one replica given 16 concurrent calls with one token also accepts exactly one", async () => {
    const node = replica();
    const session = await node.sessions.create(keyCaller, { partnerUserId: "", metadata: undefined, allowedGates: [] });
    const { id } = await node.sessions.authenticate(session.token);
    const outcomes = await Promise.allSettled(Array.from({ length: 16 }, () => node.link(id, input("checkout"))));
    expect(outcomes.filter((o) => o.status === "fulfilled")).toHaveLength(1);
    expect(
      outcomes.filter((o) => o.status === "rejected").map((o) => (o as PromiseRejectedResult).reason.kind),
    ).toEqual(Array(15).fill("unauthenticated"));
  });

  it("decides each call of a batch on its own: refusals among them write nothing and keep their tokens", async () => {
    const node = replica();
    const session = (partnerUserId: string, allowedGates: string[] = []) =>
      node.sessions
        .create(keyCaller, { partnerUserId, metadata: undefined, allowedGates })
        .then((s) => node.sessions.authenticate(s.token));
    const blocker = await session("user-batch");
    await node.link(blocker.id, input("checkout"));
    const [fresh, sameUser, restricted, unknownGate, other] = await Promise.all([
      session(""),
      session("user-batch"),
      session("", ["bar"]),
      session(""),
      session("user-other"),
    ]);
    const outcomes = await Promise.allSettled([
      node.link(fresh.id, input("checkout")),
      node.link(sameUser.id, input("checkout")),
      node.link(restricted.id, input("checkout")),
      node.link(unknownGate.id, input("nope")),
      node.link(other.id, input("checkout")),
    ]);
    expect(
      outcomes.map((o) => (o.status === "fulfilled" ? o.value.status : (o.reason as { kind: string }).kind)),
    ).toEqual(["pending", "conflict", "forbidden", "invalid", "pending"]);
    const { rows } = await statements.query(`select session_id from requests where session_id = any($1::uuid[])`, [
      [sameUser.id, restricted.id, unknownGate.id],
    ]);
    expect(rows).toEqual([]);
    const unused = await statements.query(
      `select count(*)::int as n from sessions where id = any($1::uuid[]) and consumed_at is null`,
      [[sameUser.id, restricted.id, unknownGate.id]],
    );
    expect(unused.rows[0].n).toBe(3);
  });

  it("of concurrent calls for one user on one gate, from one replica or several, exactly one is created", async () => {
    const nodes = [replica(), replica(), replica()];
    const sessions = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        nodes[0]!.sessions
          .create(keyCaller, { partnerUserId: "user-race", metadata: undefined, allowedGates: [] })
          .then((s) => nodes[0]!.sessions.authenticate(s.token))
          .then((row) => ({ row, node: nodes[i % 3]! })),
      ),
    );
    const outcomes = await Promise.allSettled(sessions.map(({ row, node }) => node.link(row.id, input("checkout"))));
    expect(outcomes.filter((o) => o.status === "fulfilled")).toHaveLength(1);
    expect(
      outcomes.filter((o) => o.status === "rejected").map((o) => (o as PromiseRejectedResult).reason.kind),
    ).toEqual(Array(11).fill("conflict"));
  });

  it("when a batch fails, its requests are written again one by one: only the failing one fails", async () => {
    const node = replica();
    const sessions = await Promise.all(
      Array.from({ length: 3 }, () =>
        node.sessions
          .create(keyCaller, { partnerUserId: "", metadata: undefined, allowedGates: [] })
          .then((s) => node.sessions.authenticate(s.token)),
      ),
    );
    const gate = await new GateFactsLookup(statements).of(organizationId, "development", "checkout");
    const now = clock.now();
    const request = (sessionId: string, requestId: string): NewRequest => ({
      sessionId,
      organizationId,
      environment: "development",
      gate,
      gateAllowed: true,
      requestId,
      flowSecretHash: Buffer.alloc(32, 1),
      idempotencyTokenHash: null,
      flowSecretSealed: null,
      traceContext: null,
      blockingHash: null,
      parentRequestId: null,
      presenceHumanId: null,
      presenceRefHash: null,
      presenceSince: now,
      refHash: null,
      refSealed: null,
      svcUserId: null,
      mode: "private",
      sdkType: "signal",
      notarizeOffered: false,
      returnUrl: null,
      metadata: null,
      pushedToDevices: 0,
      now,
      expiresAt: new Date(now.getTime() + 300_000),
      passExpiresAt: new Date(now.getTime() + 60_000),
      pushTrigger: null,
    });
    const first = `req_${"a".repeat(32)}`;
    // The three share a batch, which fails: the last reuses the first one's id. Alone, in order, the
    // first two are written and only the last fails.
    const outcomes = await Promise.allSettled([
      node.writer.write(request(sessions[0]!.id, first)),
      node.writer.write(request(sessions[1]!.id, `req_${"b".repeat(32)}`)),
      node.writer.write(request(sessions[2]!.id, first)),
    ]);
    expect(outcomes.slice(0, 2)).toEqual([
      { status: "fulfilled", value: { outcome: "pending", pushEvent: null } },
      { status: "fulfilled", value: { outcome: "pending", pushEvent: null } },
    ]);
    expect(outcomes[2]).toMatchObject({ status: "rejected", reason: { code: "23505" } });
    const consumed = await statements.query(
      `select id from sessions where id = any($1::uuid[]) and consumed_at is not null order by id`,
      [sessions.map((s) => s.id)],
    );
    expect(consumed.rows.map((r) => r.id)).toEqual([sessions[0]!.id, sessions[1]!.id].sort());
  });
});
