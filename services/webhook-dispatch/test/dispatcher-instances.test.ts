import { randomBytes } from "node:crypto";
import type { MikroORM } from "@mikro-orm/postgresql";
import { createLogger, ManualClock, openDatabase, openStatementPool, uuid } from "@svc/platform";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase, uniqueName } from "../../../test/harness/index.ts";
import { type ClaimTerms, claimDueDeliveries, recordAttemptResults } from "../src/delivery/delivery-store.ts";
import { destinationPolicyFor } from "../src/delivery/destination-guard.ts";
import { goneInstances, recordHeartbeat, releaseGoneInstances } from "../src/delivery/dispatcher-instances.ts";
import { Endpoint } from "../src/endpoints/endpoint.entity.ts";
import { addEndpoint } from "../src/endpoints/endpoint-operations.ts";
import { createSecretBox } from "../src/endpoints/endpoint-secret.ts";
import { Delivery, WebhookMessage } from "../src/messages/message.entity.ts";
import { storeMessages } from "../src/messages/message-store.ts";
import { migrations } from "../src/migrations/index.ts";

/**
 * Claims name their dispatcher; a dispatcher that is gone (its liveness lock free, or its heartbeat
 * stale by the clock) has its claims given back at once, in bounded batches, instead of after their
 * leases. Every step against the service's real schema, with time from a manual clock.
 */
describe("claims of dispatchers that are gone", () => {
  const clock = new ManualClock("2026-11-22T10:00:00Z");
  const staleAfterMs = 30_000;
  const lockNamespace = 0x77_68_64_69;
  let db: TestDatabase;
  let orm: MikroORM;
  let statements: pg.Pool;
  const locks: pg.Client[] = [];

  beforeAll(async () => {
    db = await createTestDatabase("wh_instances");
    const logger = createLogger("dispatcher-instances-test", {}, "error");
    orm = await openDatabase({
      url: db.url,
      schema: "webhook_dispatch",
      entities: [Endpoint, WebhookMessage, Delivery],
      migrations,
      logger,
    });
    statements = openStatementPool({ url: db.url, schema: "webhook_dispatch", max: 2, logger });
  });
  afterAll(async () => {
    for (const lock of locks) await lock.end().catch(() => undefined);
    await statements?.end();
    await orm?.close();
    await db?.drop();
  });

  const terms = (instanceId: string): ClaimTerms => ({
    now: clock.now(),
    instanceId,
    perEndpoint: 64,
    holds: new Map(),
    concurrency: 4,
    // Leases longer than the staleness, so what comes back here comes back by release, not by lease.
    timeoutMs: 120_000,
    marginMs: 5000,
  });

  /** A dispatcher as another process would be: its row, and its lock held on a connection of its own. */
  async function liveInstance(): Promise<{ id: string; lockKey: number; lock: pg.Client }> {
    const instance = { id: uuid(), lockKey: Math.floor(Math.random() * 2 ** 31) };
    const lock = new pg.Client({ connectionString: db.url });
    await lock.connect();
    await lock.query("select pg_advisory_lock($1, $2)", [lockNamespace, instance.lockKey]);
    locks.push(lock);
    await recordHeartbeat(statements, instance, clock.now());
    return { ...instance, lock };
  }

  /** `count` stored messages to one new endpoint, all claimed by `holder` (their leases run long). */
  async function claimedBy(holder: string, count: number) {
    const organizationId = uniqueName("org");
    const { endpoint } = await addEndpoint(
      { em: orm.em.fork(), clock, box: createSecretBox(randomBytes(32)), policy: destinationPolicyFor("development") },
      { organizationId, url: "http://127.0.0.1:9/webhooks", types: [] },
    );
    await storeMessages(
      statements,
      Array.from({ length: count }, () => ({
        organizationId,
        dedupKey: uniqueName("dedup"),
        type: "gate.human_verified",
        environment: "development",
        occurredAt: null,
        body: Buffer.from("{}"),
        resolvedCard: null,
      })),
      { firstAttemptAt: clock.now(), claim: { ...terms(holder), perEndpoint: 0 } },
    );
    const claimed = await claimDueDeliveries(statements, { ...terms(holder), limit: 1000 });
    expect(claimed.filter((d) => d.endpointId === endpoint.id)).toHaveLength(count);
    return { endpointId: endpoint.id, claimed };
  }

  const holders = async (endpointId: string) =>
    (
      await statements.query<{ claimed_by: string | null; due: boolean }>(
        `select claimed_by, next_attempt_at <= $2 as due from deliveries where endpoint_id = $1 order by id`,
        [endpointId, clock.now()],
      )
    ).rows;

  it("a dispatcher whose heartbeat is stale by the clock has its claims given back, all of them, batch by batch", async () => {
    const self = await liveInstance();
    const hung = await liveInstance();
    const { endpointId, claimed } = await claimedBy(hung.id, 12);
    const options = { self: self.id, staleAfterMs, batch: 5 };

    // Its lock is held and its last beat is 30 s old, not older: it is not gone yet.
    clock.advance(staleAfterMs);
    await recordHeartbeat(statements, self, clock.now());
    expect(await releaseGoneInstances(statements, { ...options, now: clock.now() })).toBe(0);
    expect((await holders(endpointId)).every((d) => d.claimed_by === hung.id && !d.due)).toBe(true);
    expect(await claimDueDeliveries(statements, { ...terms(self.id), limit: 1000 })).toEqual([]);

    clock.advance(1);
    expect(await releaseGoneInstances(statements, { ...options, now: clock.now() })).toBe(12);
    expect((await holders(endpointId)).every((d) => d.claimed_by === null && d.due)).toBe(true);
    expect(await goneInstances(statements, { self: self.id, now: clock.now(), staleAfterMs })).toEqual([]);

    // The next claim takes them again, the same deliveries of the same messages (the same webhook-id).
    const again = await claimDueDeliveries(statements, { ...terms(self.id), limit: 1000 });
    expect(again.map((d) => [d.deliveryId, d.messageId]).sort()).toEqual(
      claimed.map((d) => [d.deliveryId, d.messageId]).sort(),
    );
    expect(again.every((d) => d.attempts === 2)).toBe(true);
    expect((await holders(endpointId)).every((d) => d.claimed_by === self.id)).toBe(true);

    // The hung one's late result is fenced off: the delivery stays with its new holder.
    const late = claimed[0]!;
    await recordAttemptResults(
      statements,
      [
        {
          deliveryId: late.deliveryId,
          endpointId,
          attempts: late.attempts,
          scheduleStep: late.scheduleStep,
          startedAt: clock.now(),
          at: clock.now(),
          succeeded: true,
          statusCode: 204,
          error: null,
          status: "delivered",
          nextAttemptAt: null,
        },
      ],
      { now: clock.now(), autoDisableAfterMs: 5 * 86_400_000 },
    );
    const [first] = (
      await statements.query(`select status, claimed_by from deliveries where id = $1`, [late.deliveryId])
    ).rows;
    expect(first).toEqual({ status: "pending", claimed_by: self.id });
  });

  it("a dispatcher that died (its connection closed, its lock dropped) is gone at once, its heartbeat still fresh", async () => {
    const self = await liveInstance();
    const killed = await liveInstance();
    const { endpointId } = await claimedBy(killed.id, 7);
    const options = { self: self.id, staleAfterMs, batch: 500 };
    expect(await releaseGoneInstances(statements, { ...options, now: clock.now() })).toBe(0);

    await killed.lock.end();
    // PostgreSQL drops a closed session's locks as its backend exits; no clock moves.
    await expect
      .poll(() => goneInstances(statements, { self: self.id, now: clock.now(), staleAfterMs }), { timeout: 5000 })
      .toEqual([killed.id]);
    expect(await releaseGoneInstances(statements, { ...options, now: clock.now() })).toBe(7);
    expect((await holders(endpointId)).every((d) => d.claimed_by === null && d.due)).toBe(true);
  });
});
