import { randomBytes } from "node:crypto";
import type { MikroORM } from "@mikro-orm/postgresql";
import { createLogger, ManualClock, openDatabase, openStatementPool } from "@svc/platform";
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase, uniqueName } from "../../../test/harness/index.ts";
import {
  type AttemptResult,
  type ClaimedDelivery,
  type ClaimTerms,
  claimDueDeliveries,
  recordAttemptResults,
  releaseClaims,
} from "../src/delivery/delivery-store.ts";
import { destinationPolicyFor } from "../src/delivery/destination-guard.ts";
import { Endpoint } from "../src/endpoints/endpoint.entity.ts";
import { addEndpoint } from "../src/endpoints/endpoint-operations.ts";
import { createSecretBox } from "../src/endpoints/endpoint-secret.ts";
import { Delivery, WebhookMessage } from "../src/messages/message.entity.ts";
import { replayMessage } from "../src/messages/message-operations.ts";
import { storeMessages } from "../src/messages/message-store.ts";
import { migrations } from "../src/migrations/index.ts";

/**
 * The steps of one attempt, called one after the other against the service's real schema, with an
 * operator's replay placed between the claim and the attempt's result (or the claim's release).
 */
describe("a replay issued while an attempt is in flight", () => {
  const clock = new ManualClock("2026-11-22T10:00:00Z");
  let db: TestDatabase;
  let orm: MikroORM;
  let statements: pg.Pool;

  beforeAll(async () => {
    db = await createTestDatabase("wh_replay_fence");
    const logger = createLogger("replay-fence-test", {}, "error");
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
    await statements?.end();
    await orm?.close();
    await db?.drop();
  });

  const terms = (): ClaimTerms => ({
    now: clock.now(),
    instanceId: "00000000-0000-4000-8000-000000000001",
    perEndpoint: 64,
    holds: new Map(),
    concurrency: 4,
    timeoutMs: 15_000,
    marginMs: 5000,
  });
  const row = async (organizationId: string) => {
    const [delivery] = await orm.em
      .fork()
      .execute<{ status: string; attempts: number; schedule_step: number; next_attempt_at: string | null }[]>(
        `select d.status, d.attempts, d.schedule_step, d.next_attempt_at from deliveries d join messages m on m.id = d.message_id where m.organization_id = ?`,
        [organizationId],
      );
    return (
      delivery && {
        ...delivery,
        next_attempt_at: delivery.next_attempt_at && new Date(delivery.next_attempt_at).toISOString(),
      }
    );
  };

  /** One endpoint and one stored message, its delivery claimed for an attempt that is now running. */
  async function attemptInFlight(): Promise<{ organizationId: string; endpointId: string; claimed: ClaimedDelivery }> {
    const organizationId = uniqueName("org");
    const { endpoint } = await addEndpoint(
      { em: orm.em.fork(), clock, box: createSecretBox(randomBytes(32)), policy: destinationPolicyFor("development") },
      { organizationId, url: "http://127.0.0.1:9/webhooks", types: [] },
    );
    await storeMessages(
      statements,
      [
        {
          organizationId,
          dedupKey: uniqueName("dedup"),
          type: "gate.human_verified",
          environment: "development",
          occurredAt: null,
          body: Buffer.from("{}"),
          resolvedCard: null,
        },
      ],
      { firstAttemptAt: clock.now(), claim: { ...terms(), perEndpoint: 0 } },
    );
    const claimed = (await claimDueDeliveries(statements, { ...terms(), limit: 100 })).filter(
      (d) => d.endpointId === endpoint.id,
    );
    expect(claimed).toHaveLength(1);
    return { organizationId, endpointId: endpoint.id, claimed: claimed[0]! };
  }

  const resultOf = (
    claimed: ClaimedDelivery,
    outcome: Pick<AttemptResult, "succeeded" | "statusCode" | "error" | "status" | "nextAttemptAt">,
  ): AttemptResult => ({
    deliveryId: claimed.deliveryId,
    endpointId: claimed.endpointId,
    attempts: claimed.attempts,
    scheduleStep: claimed.scheduleStep,
    startedAt: clock.now(),
    at: clock.now(),
    ...outcome,
  });
  const record = (results: AttemptResult[]) =>
    recordAttemptResults(statements, results, { now: clock.now(), autoDisableAfterMs: 5 * 86_400_000 });

  it("keeps the replay's fresh schedule when the attempt's last failure is written after it", async () => {
    const { organizationId, endpointId, claimed } = await attemptInFlight();
    const messageId = claimed.messageId;
    clock.advance(1000);
    const replayedAt = clock.now();
    await replayMessage(orm.em.fork(), clock, { organizationId, messageId, endpointId });

    clock.advance(1000);
    await record([
      resultOf(claimed, {
        succeeded: false,
        statusCode: 500,
        error: "answered HTTP 500",
        status: "failed",
        nextAttemptAt: null,
      }),
    ]);
    expect(await row(organizationId)).toMatchObject({
      status: "pending",
      attempts: 1,
      schedule_step: 0,
      next_attempt_at: replayedAt.toISOString(),
    });

    // The replay's attempt is then claimed and its own result is written as usual.
    const [again] = await claimDueDeliveries(statements, { ...terms(), limit: 100 }).then((all) =>
      all.filter((d) => d.endpointId === endpointId),
    );
    expect(again).toMatchObject({ attempts: 2, scheduleStep: 1 });
    await record([
      resultOf(again!, { succeeded: true, statusCode: 204, error: null, status: "delivered", nextAttemptAt: null }),
    ]);
    expect(await row(organizationId)).toMatchObject({
      status: "delivered",
      attempts: 2,
      schedule_step: 1,
      next_attempt_at: null,
    });
  });

  it("keeps the replay when the attempt delivered meanwhile: the replay still sends it again", async () => {
    const { organizationId, endpointId, claimed } = await attemptInFlight();
    await replayMessage(orm.em.fork(), clock, { organizationId, messageId: claimed.messageId, endpointId });
    await record([
      resultOf(claimed, { succeeded: true, statusCode: 204, error: null, status: "delivered", nextAttemptAt: null }),
    ]);
    expect(await row(organizationId)).toMatchObject({
      status: "pending",
      attempts: 1,
      schedule_step: 0,
      next_attempt_at: clock.now().toISOString(),
    });
  });

  it("leaves a replayed delivery as the replay made it when the claim is given back unstarted", async () => {
    const { organizationId, endpointId, claimed } = await attemptInFlight();
    clock.advance(1000);
    const replayedAt = clock.now();
    await replayMessage(orm.em.fork(), clock, { organizationId, messageId: claimed.messageId, endpointId });
    clock.advance(1000);
    await releaseClaims(statements, [claimed], clock.now());
    expect(await row(organizationId)).toMatchObject({
      status: "pending",
      attempts: 1,
      schedule_step: 0,
      next_attempt_at: replayedAt.toISOString(),
    });
  });
});
