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
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, natsUrl, type TestDatabase, uniqueName } from "../../../test/harness/index.ts";
import { migrations } from "../src/migrations/index.ts";
import { confirmationHoldMs, requestLifetimeMs } from "../src/requests/lifetimes.ts";
import { RequestLifecycle } from "../src/requests/request-lifecycle.ts";
import { storedRequest } from "../src/requests/request-row.ts";
import { statusRecord } from "../src/requests/status-record.ts";

/**
 * A confirmation that began inside the request's window holds it while other services act (account
 * link, signing), against real PostgreSQL and the real outbox: the request completes after its window
 * with gate.human_verified, and neither the sweep nor a late open expires it meanwhile.
 */
const logger = createLogger("test", {}, "warn");
const organizationId = "5d0f7a8e-0b4c-4f3e-9a51-6c2d8e1f3a90";
const created = new Date("2026-11-22T10:00:00Z");
const at = (ms: number) => new Date(created.getTime() + ms);
const clock = new ManualClock(created);

let database: TestDatabase;
let orm: MikroORM;
let statements: pg.Pool;
let bus: EventBus;
let outbox: OutboxRelay;
let lifecycle: RequestLifecycle;
let serial = 0;

beforeAll(async () => {
  database = await createTestDatabase("gate-confirmation-hold");
  orm = await openDatabase({
    url: database.url,
    schema: "gate",
    entities: [OutboxEvent],
    migrations: [...outboxMigrations, ...migrations],
    logger,
  });
  statements = openStatementPool({ url: database.url, schema: "gate", max: 2, logger });
  const stream = uniqueName("gatehold").toUpperCase();
  bus = await connectEventBus({ url: natsUrl(), name: "gate-hold-test", stream, subjectPrefix: stream.toLowerCase() });
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

/** An opened pending request created at `created`, living the spec's five minutes. */
async function openedRequest(): Promise<string> {
  const id = `req_${(++serial).toString(16).padStart(32, "0")}`;
  await orm.em.fork().execute(
    `insert into requests (id, organization_id, environment, gate_key, gate_type, session_id, status, flow_secret_hash, mode, sdk_type, notarize_offered, created_at, expires_at, opened_at)
     values (?, ?, 'development', 'checkout', 'human', gen_random_uuid(), 'pending', '\\x00', 'private', 'signal', false, ?, ?, ?)`,
    [id, organizationId, created, at(requestLifetimeMs), created],
  );
  return id;
}

const status = async (id: string) => statusRecord(storedRequest((await lifecycle.load(id))!), clock.now()).status;
const events = async (id: string) =>
  (
    await orm.em
      .fork()
      .execute<{ message_id: string }[]>(`select message_id from outbox where message_id like ? order by id`, [
        `%:${id}`,
      ])
  ).map((row) => row.message_id.split(":")[0]);
const completion = {
  humanId: "0b8e3c4a-3f1d-4e5a-9c7b-2d6f8a1e4b30",
  trusted: false,
  firstTime: false,
  handle: undefined,
  ageVerdict: null,
  token: "t",
  tokenExpiresAt: at(requestLifetimeMs + 600_000),
};

describe("a confirmation under way holds the request's window", () => {
  it("begun a second before the window ends, it completes after the window with gate.human_verified; the sweep and a late open leave it pending meanwhile", async () => {
    const id = await openedRequest();
    clock.set(at(requestLifetimeMs - 1_000));
    expect(await lifecycle.holdForConfirmation(id)).toBe(true);

    clock.set(at(requestLifetimeMs + 5_000));
    await lifecycle.sweep(100);
    expect(await lifecycle.expireOnLateOpen(id)).toBeUndefined();
    expect(await status(id)).toBe("pending");

    expect(await lifecycle.complete(id, completion)).toMatchObject({ status: "completed" });
    expect(await status(id)).toBe("completed");
    expect(await events(id)).toEqual(["gate.human_verified"]);
  });

  it("is refused once the window has passed: the request reads expired", async () => {
    const id = await openedRequest();
    clock.set(at(requestLifetimeMs));
    expect(await lifecycle.holdForConfirmation(id)).toBe(false);
    expect(await status(id)).toBe("expired");
  });

  it("a confirmation that never finishes lets the request expire when its hold runs out, with gate.unavailable", async () => {
    const id = await openedRequest();
    clock.set(at(requestLifetimeMs - 1_000));
    expect(await lifecycle.holdForConfirmation(id)).toBe(true);

    clock.set(at(requestLifetimeMs - 1_000 + confirmationHoldMs));
    expect(await status(id)).toBe("expired");
    await lifecycle.sweep(100);
    expect((await lifecycle.load(id))!.status).toBe("expired");
    expect(await events(id)).toEqual(["gate.unavailable"]);
    expect(await lifecycle.complete(id, completion)).toBeUndefined();
  });
});
