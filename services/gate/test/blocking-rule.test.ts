import type { MikroORM } from "@mikro-orm/postgresql";
import {
  connectNats,
  createLogger,
  ManualClock,
  type NatsConnection,
  OutboxEvent,
  openDatabase,
  openStatementPool,
  outboxMigrations,
} from "@svc/platform";
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, natsUrl, type TestDatabase, uniqueName } from "../../../test/harness/index.ts";
import type { PartnerCaller } from "../src/caller.ts";
import { GateFactsLookup } from "../src/gates/gate-facts.ts";
import { GateStore } from "../src/gates/gate-store.ts";
import { migrations } from "../src/migrations/index.ts";
import { partnerRefs } from "../src/partner-refs.ts";
import { createLink, type LinkInput } from "../src/requests/create-link.ts";
import { IdempotentCreates } from "../src/requests/idempotent-creates.ts";
import { PartnerQueries } from "../src/requests/partner-queries.ts";
import { createVerificationRequests, RequestWriter } from "../src/requests/request-writer.ts";
import { SessionFactsLookup } from "../src/sessions/session-facts.ts";
import { SessionStore } from "../src/sessions/session-store.ts";

/**
 * The 409 rule, clause by clause (spec "Errors", "The 409 rule"), and the refusal order of
 * create-verification-link, against real PostgreSQL: who a request is checked as is decided in
 * `blocking-rule.ts`, what blocks it in `create-verification-requests.sql`; both run here as the
 * service runs them, through create-link and the request writer.
 */
const logger = createLogger("test", {}, "warn");
const organizationId = "6e1a8b9f-1c5d-4a4f-8b62-7d3e9f2a4b01";
const secretKey: PartnerCaller = {
  organizationId,
  environment: "development",
  credentialId: "key-1",
  kind: "secret_key",
};
const siteKey: PartnerCaller = { ...secretKey, credentialId: "site-1", kind: "site_key" };
const clock = new ManualClock(new Date("2026-11-22T10:00:00Z"));
const refs = partnerRefs(Buffer.alloc(32, 9));

let database: TestDatabase;
let orm: MikroORM;
let statements: pg.Pool;
let nc: NatsConnection;
let sessions: SessionStore;
let partner: PartnerQueries;
let link: (sessionId: string, input: Partial<LinkInput>) => ReturnType<typeof createLink>;

/** A fresh grant token's session: its id is what create-verification-link is called with. */
const session = async (options: { partnerUserId?: string; via?: PartnerCaller; allowedGates?: string[] } = {}) => {
  const created = await sessions.create(options.via ?? secretKey, {
    partnerUserId: options.partnerUserId ?? "",
    metadata: undefined,
    allowedGates: options.allowedGates ?? [],
  });
  return (await sessions.authenticate(created.token)).id;
};

/** The outcome of one call: the request's status, or the refusal's kind (conflict is the 409). */
const outcome = (sessionId: string, input: Partial<LinkInput> = {}) =>
  link(sessionId, input).then(
    (created) => created.status,
    (refusal: { kind: string }) => refusal.kind,
  );

const setRequest = (requestId: string, change: string, values: unknown[] = []) =>
  statements.query(`update requests set ${change} where id = $1`, [requestId, ...values]);

let serial = 0;
/** A user name no other test uses, so each test sees only its own requests. */
const user = (label: string) => `${label}-${++serial}`;

beforeAll(async () => {
  database = await createTestDatabase("gate-blocking-rule");
  orm = await openDatabase({
    url: database.url,
    schema: "gate",
    entities: [OutboxEvent],
    migrations: [...outboxMigrations, ...migrations],
    storedDefinitions: [createVerificationRequests],
    logger,
  });
  statements = openStatementPool({ url: database.url, schema: "gate", max: 4, logger });
  const sessionFacts = new SessionFactsLookup(statements);
  sessions = new SessionStore({ db: statements, clock, refs, facts: sessionFacts });
  nc = await connectNats({ url: natsUrl(), name: "gate-blocking-rule-test" });
  partner = new PartnerQueries({ orm, clock, refs, bus: { nc, subjectPrefix: uniqueName("blocking") } });
  const deps = {
    writer: new RequestWriter(statements),
    sessions: sessionFacts,
    gates: new GateFactsLookup(statements),
    clock,
    bus: { subjectPrefix: "svc" },
    refs,
    presenceWindowMs: 600_000,
    idempotent: new IdempotentCreates({ db: statements, refs, gates: new GateFactsLookup(statements) }),
  };
  link = (sessionId, input) =>
    createLink(
      deps,
      { ...secretKey, credentialId: sessionId, kind: "grant_token" },
      {
        gate: "checkout",
        returnUrl: "",
        mode: "",
        svcUserId: "",
        partnerUserRef: "",
        parentRequestId: "",
        metadata: undefined,
        notarize: false,
        idempotencyToken: "",
        ...input,
      },
      { devices: 0 },
    );
  const gates = new GateStore({ orm, clock });
  for (const [key, status] of [
    ["checkout", "active"],
    ["other", "active"],
    ["drafted", "draft"],
  ] as const)
    await gates.create({
      organizationId,
      environment: "development",
      key,
      type: "human",
      ageThreshold: undefined,
      status,
      notarizeOffer: false,
    });
});

afterAll(async () => {
  await nc?.close();
  await statements?.end();
  await orm?.close();
  await database?.drop();
});

describe("the 409 rule", () => {
  describe("clause 1: the same user is partner_user_ref, else the session's partner_user_id", () => {
    it("a partner_user_ref blocks the same ref, whatever the sessions' partner_user_id", async () => {
      const ref = user("ref");
      expect(await outcome(await session({ partnerUserId: user("a") }), { partnerUserRef: ref })).toBe("pending");
      expect(await outcome(await session({ partnerUserId: user("b") }), { partnerUserRef: ref })).toBe("conflict");
    });

    it("without a ref, the session's partner_user_id is the user", async () => {
      const id = user("id");
      expect(await outcome(await session({ partnerUserId: id }))).toBe("pending");
      expect(await outcome(await session({ partnerUserId: id }))).toBe("conflict");
    });

    it("a ref replaces the partner_user_id: the session's id alone is then another user", async () => {
      const id = user("id");
      expect(await outcome(await session({ partnerUserId: id }), { partnerUserRef: user("ref") })).toBe("pending");
      expect(await outcome(await session({ partnerUserId: id }))).toBe("pending");
    });

    it("the user is checked per gate", async () => {
      const id = user("id");
      expect(await outcome(await session({ partnerUserId: id }))).toBe("pending");
      expect(await outcome(await session({ partnerUserId: id }), { gate: "other" })).toBe("pending");
    });
  });

  describe("clause 2: only pending unexpired requests block", () => {
    const blocked = async (change: string, values: unknown[] = []) => {
      const id = user("id");
      const first = await link(await session({ partnerUserId: id }), {});
      await setRequest(first.requestId, change, values);
      return outcome(await session({ partnerUserId: id }));
    };

    it("a pending request inside its window blocks", async () => {
      expect(await blocked("status = 'pending'")).toBe("conflict");
    });

    it("a pending request at or past the end of its window does not", async () => {
      expect(await blocked("expires_at = $2", [clock.now()])).toBe("pending");
      expect(await blocked("expires_at = $2", [new Date(clock.now().getTime() - 1)])).toBe("pending");
    });

    it("completed, failed, expired and pass requests never block", async () => {
      for (const status of ["completed", "failed", "expired", "pass"])
        expect(await blocked("status = $2", [status]), status).toBe("pending");
    });
  });

  describe("clause 3: requests with neither value, or naming no gate, are not checked", () => {
    it("with neither value, any number of requests are accepted, and none keeps a user", async () => {
      const created = [await link(await session(), {}), await link(await session(), {})];
      const { rows } = await statements.query(`select blocking_user_hash from requests where id = any($1)`, [
        created.map((c) => c.requestId),
      ]);
      expect(rows).toEqual([{ blocking_user_hash: null }, { blocking_user_hash: null }]);
    });

    it("a request naming no gate is refused as such (400), never as a conflict", async () => {
      const id = user("id");
      expect(await outcome(await session({ partnerUserId: id }))).toBe("pending");
      expect(await outcome(await session({ partnerUserId: id }), { gate: "" })).toBe("invalid");
    });
  });

  describe("clause 4: a site-key session without partner_user_id is not checked", () => {
    it("even when the call sends a partner_user_ref", async () => {
      const ref = user("ref");
      expect(await outcome(await session({ via: siteKey }), { partnerUserRef: ref })).toBe("pending");
      expect(await outcome(await session({ via: siteKey }), { partnerUserRef: ref })).toBe("pending");
    });

    it("a site-key session with partner_user_id is checked", async () => {
      const id = user("id");
      expect(await outcome(await session({ via: siteKey, partnerUserId: id }))).toBe("pending");
      expect(await outcome(await session({ via: siteKey, partnerUserId: id }))).toBe("conflict");
    });
  });

  describe("clause 5: revoke-verification with the user's reference as partner_user_id clears it", () => {
    it("after which the refused grant token creates", async () => {
      const ref = user("ref");
      await link(await session({ partnerUserId: user("a") }), { partnerUserRef: ref });
      const refused = await session({ partnerUserId: user("b") });
      expect(await outcome(refused, { partnerUserRef: ref })).toBe("conflict");
      expect(await partner.revoke(secretKey, "checkout", ref, [])).toBe(1);
      expect(await outcome(refused, { partnerUserRef: ref })).toBe("pending");
    });

    it("the session's partner_user_id clears a request checked under it", async () => {
      const id = user("id");
      await link(await session({ partnerUserId: id }), {});
      expect(await partner.revoke(secretKey, "other", id, [])).toBe(0);
      expect(await partner.revoke(secretKey, "checkout", id, [])).toBe(1);
      expect(await outcome(await session({ partnerUserId: id }))).toBe("pending");
    });
  });

  it("a presence ceremony is not blocked by its own pre-check, which it replaces; another request's id does not help", async () => {
    const id = user("id");
    const preCheck = await link(await session({ partnerUserId: id }), {});
    const unrelated = await link(await session({ partnerUserId: user("other") }), {});
    expect(await outcome(await session({ partnerUserId: id }), { parentRequestId: unrelated.requestId })).toBe(
      "conflict",
    );
    expect(await outcome(await session({ partnerUserId: id }), { parentRequestId: preCheck.requestId })).toBe(
      "pending",
    );
    const { rows } = await statements.query(`select status, ended_by from requests where id = $1`, [
      preCheck.requestId,
    ]);
    expect(rows).toEqual([{ status: "expired", ended_by: "superseded" }]);
  });
});

describe("the refusal order of create-verification-link: 401, 400, 403, 409", () => {
  it("refuses with the first that applies, and a refused call consumes nothing", async () => {
    const id = user("id");
    await link(await session({ partnerUserId: id }), {});
    const restricted = await session({ partnerUserId: id, allowedGates: ["other"] });
    // Every rule after 400 applies too: the gate is not allowed, and the user has a pending request.
    expect(await outcome(restricted, { gate: "drafted" })).toBe("invalid");
    expect(await outcome(restricted, { gate: "nowhere" })).toBe("invalid");
    expect(await outcome(restricted, { gate: "checkout" })).toBe("forbidden");
    const allowed = await session({ partnerUserId: id, allowedGates: ["checkout"] });
    expect(await outcome(allowed, { gate: "checkout" })).toBe("conflict");
    expect(await outcome(restricted, { gate: "other" })).toBe("pending");
    // The token is now used: 401 comes before every other rule.
    expect(await outcome(restricted, { gate: "nowhere" })).toBe("unauthenticated");
    expect(await outcome(restricted, { gate: "checkout" })).toBe("unauthenticated");
  });

  it("a revoked or expired token is refused first too", async () => {
    const id = user("id");
    await link(await session({ partnerUserId: id }), {});
    const revoked = await session({ partnerUserId: id });
    await statements.query(`update sessions set revoked_at = $2 where id = $1`, [revoked, clock.now()]);
    expect(await outcome(revoked, { gate: "drafted" })).toBe("unauthenticated");
    const expired = await session({ partnerUserId: id });
    await statements.query(`update sessions set expires_at = $2 where id = $1`, [expired, clock.now()]);
    expect(await outcome(expired, { gate: "drafted" })).toBe("unauthenticated");
  });
});
