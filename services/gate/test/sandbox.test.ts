import { randomUUID } from "node:crypto";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, createClient, createRouterTransport } from "@connectrpc/connect";
import type { MikroORM } from "@mikro-orm/postgresql";
import {
  connectEventBus,
  createLogger,
  type EventBus,
  ManualClock,
  OutboxEvent,
  type OutboxRelay,
  openDatabase,
  openStatementPool,
  outboxMigrations,
  startOutboxRelay,
} from "@svc/platform";
import { AccountService, SandboxBehavior } from "@svc/proto/account/v1/account_pb.js";
import { SigningService } from "@svc/proto/signing/v1/signing_pb.js";
import type pg from "pg";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createTestDatabase, natsUrl, type TestDatabase, uniqueName } from "../../../test/harness/index.ts";
import { Ceremony } from "../src/ceremony/ceremony.ts";
import { SandboxResponder, type SandboxVerdict, sandboxClaimMs, sandboxFastPathMs } from "../src/ceremony/sandbox.ts";
import { migrations } from "../src/migrations/index.ts";
import { partnerRefs } from "../src/partner-refs.ts";
import { requestLifetimeMs } from "../src/requests/lifetimes.ts";
import { RequestLifecycle } from "../src/requests/request-lifecycle.ts";

/**
 * Sandbox humans answer as reliably as a person: against real PostgreSQL, NATS and the outbox, with the
 * clock injected, a request whose fast-path answer was lost is answered by the sandbox sweep once its
 * answer is due, a request already answered or past its window is left alone, and sweeps of two
 * replicas at once answer each request once. The account and signing services answer in process
 * (their contracts only), and the account service can be taken away.
 */
const logger = createLogger("test", {}, "error");
const organizationId = "7a1c2e3d-4b5f-4a6e-8c7d-9e0f1a2b3c4d";
const created = new Date("2026-11-22T10:00:00Z");
const at = (ms: number) => new Date(created.getTime() + ms);
const clock = new ManualClock(created);

/** The account service as the sandbox path uses it; its next `awayFor` assertions fail as if it were away. */
let awayFor = 0;
let assertionsBegun = 0;
/** Runs while an assertion is finished: where a test makes another answer win the race. */
let whileFinishing: (() => Promise<void>) | undefined;
const account = createClient(
  AccountService,
  createRouterTransport(({ service }) => {
    service(AccountService, {
      beginPasskeyAssertion: () => {
        assertionsBegun++;
        if (awayFor-- > 0) throw new ConnectError("account is away", Code.Unavailable);
        return { ceremonyId: randomUUID(), optionsJson: "{}" };
      },
      sandboxAssert: ({ svcUserId }) => ({ responseJson: JSON.stringify({ svcUserId }) }),
      finishPasskeyAssertion: async ({ responseJson }) => {
        await whileFinishing?.();
        return { svcUserId: JSON.parse(responseJson).svcUserId, userVerified: true };
      },
    });
  }),
);
const signing = createClient(
  SigningService,
  createRouterTransport(({ service }) => {
    service(SigningService, {
      signAttestation: ({ requestId }) => ({
        token: `token-${requestId}`,
        expiresAt: timestampFromDate(at(requestLifetimeMs + 120_000)),
      }),
    });
  }),
);

let database: TestDatabase;
let orm: MikroORM;
let statements: pg.Pool;
let bus: EventBus;
let outbox: OutboxRelay;
let lifecycle: RequestLifecycle;

const responder = (deployment: "development" | "production" = "development") =>
  new SandboxResponder({
    ceremony: new Ceremony({ lifecycle, account, signing, refs: partnerRefs(Buffer.alloc(32, 7)), clock, logger }),
    account,
    rp: { rpId: "127.0.0.1", origin: "http://127.0.0.1:8080" },
    orm,
    clock,
    logger,
    deployment,
    retriesMs: [1, 1],
  });

beforeAll(async () => {
  database = await createTestDatabase("gate-sandbox");
  orm = await openDatabase({
    url: database.url,
    schema: "gate",
    entities: [OutboxEvent],
    migrations: [...outboxMigrations, ...migrations],
    logger,
  });
  statements = openStatementPool({ url: database.url, schema: "gate", max: 2, logger });
  const stream = uniqueName("gatesandbox").toUpperCase();
  bus = await connectEventBus({
    url: natsUrl(),
    name: "gate-sandbox-test",
    stream,
    subjectPrefix: stream.toLowerCase(),
  });
  outbox = startOutboxRelay({ statements, bus, logger, clock });
  lifecycle = new RequestLifecycle({ orm, clock, bus, outbox });
});

afterAll(async () => {
  await outbox?.stop();
  await bus?.nc.drain();
  await statements?.end();
  await orm?.close();
  await database?.drop();
});

beforeEach(async () => {
  // Each test sees only its own requests: earlier ones are ended, so no sweep finds them.
  await orm.em
    .fork()
    .execute(`update requests set status = 'expired', ended_at = ?, ended_by = 'revoked' where status = 'pending'`, [
      created,
    ]);
  clock.set(created);
  awayFor = 0;
  assertionsBegun = 0;
  whileFinishing = undefined;
});

/**
 * A request for a sandbox human as create-verification-link records it at `created`: its answer due
 * `sandboxFastPathMs` later, when the creating process's fast path has had its time.
 */
async function sandboxRequest(verdict: SandboxVerdict, status = "pending"): Promise<{ id: string; human: string }> {
  const id = `req_${randomUUID().replaceAll("-", "")}`;
  const human = randomUUID();
  await orm.em.fork().execute(
    `insert into requests (id, organization_id, environment, gate_key, gate_type, session_id, status, flow_secret_hash, svc_user_id, mode, sdk_type,
       notarize_offered, created_at, expires_at, ended_at, ended_by, sandbox_behavior, sandbox_answer_at)
     values (?, ?, 'development', 'checkout', 'human', gen_random_uuid(), ?, '\\x00', ?, 'linked-account', 'signal', false, ?, ?, ?, ?, ?, ?)`,
    [
      id,
      organizationId,
      status,
      human,
      created,
      at(requestLifetimeMs),
      status === "pending" ? null : created,
      status === "pending" ? null : "confirmed",
      verdict,
      at(sandboxFastPathMs),
    ],
  );
  return { id, human };
}

const statusOf = async (id: string) =>
  (await orm.em.fork().execute<{ status: string }[]>(`select status from requests where id = ?`, [id]))[0]?.status;
const eventsOf = async (id: string) =>
  (
    await orm.em
      .fork()
      .execute<{ message_id: string }[]>(`select message_id from outbox where message_id like ? order by id`, [
        `%:${id}`,
      ])
  ).map((row) => row.message_id.split(":")[0]);

describe("sandbox humans", () => {
  const confirming = { sandboxBehavior: SandboxBehavior.CONFIRM };

  it("are honoured in the development environment of a development deployment", () => {
    expect(responder().behaviorOf(confirming, "development")).toBe("confirm");
    expect(responder().behaviorOf({ sandboxBehavior: SandboxBehavior.DECLINE }, "development")).toBe("decline");
    expect(responder().behaviorOf({ sandboxBehavior: SandboxBehavior.UNSPECIFIED }, "development")).toBeUndefined();
    expect(responder().behaviorOf(undefined, "development")).toBeUndefined();
  });

  it("are never honoured in the production environment or a production deployment, and production never sweeps", async () => {
    expect(responder().behaviorOf(confirming, "production")).toBeUndefined();
    expect(responder("production").behaviorOf(confirming, "development")).toBeUndefined();
    const { id } = await sandboxRequest("confirm");
    clock.set(at(sandboxFastPathMs));
    expect(await responder("production").sweep(20)).toBe(0);
    expect(await statusOf(id)).toBe("pending");
  });
});

describe("a sandbox human's answer survives its process", () => {
  it("a request whose fast path never ran (the process stopped) is answered by the sweep once its answer is due, not before", async () => {
    const confirming = await sandboxRequest("confirm");
    const declining = await sandboxRequest("decline");
    const sweeper = responder();

    clock.set(at(sandboxFastPathMs - 1));
    expect(await sweeper.sweep(20)).toBe(0);
    expect([await statusOf(confirming.id), await statusOf(declining.id)]).toEqual(["pending", "pending"]);

    clock.set(at(sandboxFastPathMs));
    expect(await sweeper.sweep(20)).toBe(2);
    expect(await statusOf(confirming.id)).toBe("completed");
    expect(await eventsOf(confirming.id)).toEqual(["gate.human_verified"]);
    expect(await statusOf(declining.id)).toBe("failed");
    expect(await eventsOf(declining.id)).toEqual(["gate.unavailable"]);
    // Answered: no later sweep finds them.
    clock.set(at(sandboxFastPathMs + sandboxClaimMs));
    expect(await sweeper.sweep(20)).toBe(0);
  });

  it("a fast path that failed on every retry (the account service away) is answered by the sweep", async () => {
    const { id, human } = await sandboxRequest("confirm");
    const sweeper = responder();
    awayFor = Number.POSITIVE_INFINITY;
    await sweeper.answerSoon(id, human, "confirm");
    expect(assertionsBegun).toBe(3);
    expect(await statusOf(id)).toBe("pending");

    awayFor = 0;
    clock.set(at(sandboxFastPathMs));
    expect(await sweeper.sweep(20)).toBe(1);
    expect(await statusOf(id)).toBe("completed");
    expect(await eventsOf(id)).toEqual(["gate.human_verified"]);
  });

  it("a transient failure of the fast path is retried: the answer comes without the sweep", async () => {
    const { id, human } = await sandboxRequest("confirm");
    awayFor = 2;
    await responder().answerSoon(id, human, "confirm");
    expect(assertionsBegun).toBe(3);
    expect(await statusOf(id)).toBe("completed");
    expect(await eventsOf(id)).toEqual(["gate.human_verified"]);
  });

  it("a sweep's answer that failed is claimed again only once its claim ran out", async () => {
    const { id } = await sandboxRequest("confirm");
    const sweeper = responder();
    clock.set(at(sandboxFastPathMs));
    awayFor = Number.POSITIVE_INFINITY;
    expect(await sweeper.sweep(20)).toBe(1);
    expect(await statusOf(id)).toBe("pending");

    awayFor = 0;
    clock.set(at(sandboxFastPathMs + sandboxClaimMs - 1));
    expect(await sweeper.sweep(20)).toBe(0);
    clock.set(at(sandboxFastPathMs + sandboxClaimMs));
    expect(await sweeper.sweep(20)).toBe(1);
    expect(await statusOf(id)).toBe("completed");
  });

  it("leaves alone a request already answered, and one past its window (the expiry sweep's, without a late event)", async () => {
    const answered = await sandboxRequest("confirm", "completed");
    const late = await sandboxRequest("confirm");
    clock.set(at(requestLifetimeMs));
    expect(await responder().sweep(20)).toBe(0);
    expect(assertionsBegun).toBe(0);
    expect(await statusOf(answered.id)).toBe("completed");
    expect(await statusOf(late.id)).toBe("pending");
    expect([...(await eventsOf(answered.id)), ...(await eventsOf(late.id))]).toEqual([]);
  });

  it("the fast path finding the request answered already leaves it alone", async () => {
    const { id, human } = await sandboxRequest("decline");
    const sweeper = responder();
    clock.set(at(sandboxFastPathMs));
    expect(await sweeper.sweep(20)).toBe(1);
    await sweeper.answerSoon(id, human, "decline");
    expect(await statusOf(id)).toBe("failed");
    expect(await eventsOf(id)).toEqual(["gate.unavailable"]);
  });

  it("an attempt that lost the race to another answer is done, not a failure to retry: the winner's answer stands", async () => {
    const pending = await sandboxRequest("confirm");
    awayFor = 1;
    await expect(responder().answer(pending.id, pending.human, "confirm")).rejects.toThrow("account is away");

    const { id, human } = await sandboxRequest("confirm");
    whileFinishing = async () => {
      // Another answer ends the request first; this assertion is then refused, as a second one of the passkey is.
      await lifecycle.fail(id, { reason: "user_denied", errorMessage: "declined meanwhile" });
      throw new ConnectError("another assertion of this passkey was accepted at the same time", Code.PermissionDenied);
    };
    await expect(responder().answer(id, human, "confirm")).resolves.toBeUndefined();
    expect(await statusOf(id)).toBe("failed");
    expect(await eventsOf(id)).toEqual(["gate.unavailable"]);
  });

  it("sweeps of two replicas at once answer each request once", async () => {
    const requests = await Promise.all(Array.from({ length: 12 }, () => sandboxRequest("confirm")));
    clock.set(at(sandboxFastPathMs));
    const [one, other] = await Promise.all([responder().sweep(20), responder().sweep(20)]);
    expect(one + other).toBe(12);
    expect(assertionsBegun).toBe(12);
    for (const { id } of requests) {
      expect(await statusOf(id)).toBe("completed");
      expect(await eventsOf(id)).toEqual(["gate.human_verified"]);
    }
  });
});
