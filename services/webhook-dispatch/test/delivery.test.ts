import { create, toBinary } from "@bufbuild/protobuf";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { jetstreamManager } from "@nats-io/jetstream";
import { epochSeconds, ManualClock } from "@svc/platform";
import { type Event, EventSchema } from "@svc/proto/events/v1/events_pb.js";
import { DeliveryStatus } from "@svc/proto/webhook/v1/webhook_pb.js";
import { WebhookVerificationError } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { uniqueName } from "../../../test/harness/index.ts";
import { renderPayload } from "../src/delivery/payload-rendering.ts";
import { webhookTypes } from "../src/event-types.ts";
import { startTestDispatcher, type TestDispatcher } from "./support/dispatcher.ts";
import { at, gateEvent, oneOfEachType, typeOf } from "./support/events.ts";
import { type Receiver, startReceiver, verifyDelivery } from "./support/receiver.ts";

const second = 1000;
const minute = 60 * second;
const hour = 60 * minute;

describe("delivery", () => {
  const clock = new ManualClock(new Date());
  let dispatcher: TestDispatcher;
  const receivers: Receiver[] = [];
  let sentinel: { organizationId: string; receiver: Receiver };

  const receiver = async (...args: Parameters<typeof startReceiver>) => {
    const started = await startReceiver(...args);
    receivers.push(started);
    return started;
  };
  const endpoint = async (organizationId: string, url: string, types: string[] = []) =>
    dispatcher.console.addEndpoint({ organizationId, url, types });
  const delivery = async (organizationId: string, endpointId: string) =>
    (await dispatcher.console.listMessages({ organizationId, endpointId })).messages[0]?.deliveries[0];
  const nextAttemptAt = async (organizationId: string, endpointId: string) => {
    const next = (await delivery(organizationId, endpointId))?.nextAttemptAt;
    return next ? timestampDate(next).toISOString() : undefined;
  };
  /**
   * Proves the worker has looked for due work at the current clock: an event published now to an
   * endpoint that answers at once comes out only from a claim made after this call.
   */
  const workerHasLookedNow = async () => {
    const before = sentinel.receiver.requests.length;
    await dispatcher.publish(gateEvent(sentinel.organizationId));
    await expect.poll(() => sentinel.receiver.requests.length, { timeout: 10_000 }).toBe(before + 1);
  };

  beforeAll(async () => {
    dispatcher = await startTestDispatcher("wh_delivery", {
      clock,
      env: { WEBHOOK_DISPATCH_RETRY_JITTER_PERCENT: "0" },
    });
    sentinel = { organizationId: uniqueName("sentinel"), receiver: await receiver() };
    await endpoint(sentinel.organizationId, sentinel.receiver.url);
  });
  afterAll(async () => {
    await dispatcher?.stop();
    await Promise.all(receivers.map((r) => r.close()));
  });

  it("sends every event type with the spec's payload, signed so that standardwebhooks verifies it", async () => {
    const organizationId = uniqueName("org");
    const partner = await receiver();
    const { secret } = await endpoint(organizationId, partner.url);
    const events = oneOfEachType(organizationId);
    for (const event of events) await dispatcher.publish(event);

    await expect.poll(() => partner.requests.length, { timeout: 10_000 }).toBe(events.length);
    const byType = new Map(partner.requests.map((r) => [r.json.type as string, r]));
    expect([...byType.keys()].sort()).toEqual([...webhookTypes].sort());
    for (const event of events) {
      const request = byType.get(typeOf(event))!;
      const rendered = renderPayload(event);
      expect(rendered.kind === "rendered" && request.body.equals(rendered.body)).toBe(true);
      expect(request.headers["content-type"]).toBe("application/json");
      expect(request.webhookId).toMatch(/^msg_[A-Za-z0-9]{24}$/);
      expect(request.timestamp).toBe(epochSeconds(clock.now()));
      expect(verifyDelivery(secret, request, clock.now())).toEqual(JSON.parse(request.body.toString()));
      const tampered = Buffer.from(request.body.toString().replace(/"type":"[^"]+"/, '"type":"forged"'));
      expect(() => verifyDelivery(secret, { headers: request.headers, body: tampered }, clock.now())).toThrow(
        WebhookVerificationError,
      );
    }
    expect(new Set(partner.requests.map((r) => r.webhookId)).size).toBe(events.length);
    expect(() => verifyDelivery(secret, partner.requests[0]!, new Date(clock.now().getTime() + 6 * minute))).toThrow(
      "Message timestamp too old",
    );
  });

  it("fans out to every endpoint of the organization whose filter takes the type, and to no other organization", async () => {
    const organizationId = uniqueName("org");
    const [filtered, everything, elsewhere] = await Promise.all([receiver(), receiver(), receiver()]);
    const f = await endpoint(organizationId, filtered.url, ["gate.human_verified", "account.secured"]);
    await endpoint(organizationId, everything.url);
    await endpoint(uniqueName("other-org"), elsewhere.url);
    const events = oneOfEachType(organizationId);
    for (const event of events) await dispatcher.publish(event);

    await expect.poll(() => everything.requests.length, { timeout: 10_000 }).toBe(events.length);
    await expect.poll(() => filtered.requests.length).toBe(2);
    expect(filtered.requests.map((r) => r.json.type).sort()).toEqual(["account.secured", "gate.human_verified"]);
    expect((await dispatcher.console.listMessages({ organizationId, endpointId: f.endpointId })).messages).toHaveLength(
      2,
    );
    expect((await dispatcher.console.listMessages({ organizationId })).messages).toHaveLength(events.length);
    expect(elsewhere.requests).toHaveLength(0);
  });

  it("stores a re-published event once, even when JetStream takes it twice under different message ids", async () => {
    const organizationId = uniqueName("org");
    const partner = await receiver();
    await endpoint(organizationId, partner.url);
    const event = gateEvent(organizationId);
    const subject = dispatcher.bus.subject(typeOf(event));
    const first = await dispatcher.bus.js.publish(subject, toBinary(EventSchema, event), {
      msgID: `${event.dedupKey}#1`,
    });
    const second = await dispatcher.bus.js.publish(subject, toBinary(EventSchema, event), {
      msgID: `${event.dedupKey}#2`,
    });
    expect([first.duplicate, second.duplicate]).toEqual([false, false]);
    await workerHasLookedNow();

    await expect.poll(() => partner.requests.length, { timeout: 10_000 }).toBe(1);
    const stored = await dispatcher.sql<{ id: string }>("select id from messages where dedup_key = $1", [
      event.dedupKey,
    ]);
    expect(stored).toHaveLength(1);
    expect(await dispatcher.sql("select 1 from deliveries where message_id = $1", [stored[0]!.id])).toHaveLength(1);
    expect(partner.requests[0]!.webhookId).toBe(stored[0]!.id);
  });

  it("acknowledges an event only once it is stored: while Postgres refuses it, the stream offers it again", async () => {
    const organizationId = uniqueName("org");
    const partner = await receiver();
    await endpoint(organizationId, partner.url);
    const consumerInfo = async () =>
      (await jetstreamManager(dispatcher.bus.nc)).consumers.info(dispatcher.env.SVC_EVENT_STREAM!, "webhook-dispatch");
    const redeliveredBefore = (await consumerInfo()).num_redelivered;
    await dispatcher.sql("alter table messages add constraint refuse_every_message check (false) not valid");
    try {
      await dispatcher.publish(gateEvent(organizationId));
      await expect
        .poll(async () => (await consumerInfo()).num_redelivered, { timeout: 10_000 })
        .toBeGreaterThan(redeliveredBefore);
      expect(partner.requests).toHaveLength(0);
    } finally {
      await dispatcher.sql("alter table messages drop constraint refuse_every_message");
    }
    await expect.poll(() => partner.requests.length, { timeout: 10_000 }).toBe(1);
    await expect.poll(async () => (await consumerInfo()).num_ack_pending, { timeout: 10_000 }).toBe(0);
  });

  it("drops an event that breaks the contract (no payload, an impossible instant) and goes on with the next", async () => {
    const organizationId = uniqueName("org");
    const partner = await receiver();
    await endpoint(organizationId, partner.url);
    const noPayload = create(EventSchema, {
      dedupKey: `none:${uniqueName("k")}`,
      organizationId,
      occurredAt: at("2026-11-22T10:00:00Z"),
    });
    await dispatcher.bus.js.publish(dispatcher.bus.subject("gate.human_verified"), toBinary(EventSchema, noPayload), {
      msgID: noPayload.dedupKey,
    });
    const impossible = gateEvent(organizationId);
    impossible.occurredAt = { $typeName: "google.protobuf.Timestamp", seconds: 10n ** 15n, nanos: 0 };
    await dispatcher.publish(impossible);
    const good = gateEvent(organizationId);
    await dispatcher.publish(good);
    await workerHasLookedNow();

    await expect.poll(() => partner.requests.length, { timeout: 10_000 }).toBe(1);
    expect(JSON.parse(partner.requests[0]!.body.toString()).event_id).toBe(
      (good.payload.value as { eventId: string }).eventId,
    );
    // Dropped for good (terminated), not parked among the consumer's pending messages.
    const pending = async () =>
      (
        await (
          await jetstreamManager(dispatcher.bus.nc)
        ).consumers.info(dispatcher.env.SVC_EVENT_STREAM!, "webhook-dispatch")
      ).num_ack_pending;
    await expect.poll(pending, { timeout: 10_000 }).toBe(0);
    expect(
      await dispatcher.sql("select 1 from messages where dedup_key in ($1, $2)", [
        noPayload.dedupKey,
        impossible.dedupKey,
      ]),
    ).toHaveLength(0);
  });

  it("retries on the default schedule, from the clock, with one webhook-id and a fresh timestamp per attempt, then fails", async () => {
    const organizationId = uniqueName("org");
    const partner = await receiver(() => ({ status: 500 }));
    const { endpointId, secret } = await endpoint(organizationId, partner.url);
    await dispatcher.publish(gateEvent(organizationId));

    const delaysAfter = [5 * second, 5 * minute, 30 * minute, 2 * hour, 5 * hour, 10 * hour, 10 * hour];
    for (let attempt = 1; attempt <= 8; attempt += 1) {
      await expect.poll(() => partner.requests.length, { timeout: 10_000 }).toBe(attempt);
      const request = partner.requests[attempt - 1]!;
      expect(request.webhookId).toBe(partner.requests[0]!.webhookId);
      expect(request.timestamp).toBe(epochSeconds(clock.now()));
      expect(verifyDelivery(secret, request, clock.now())).toBeDefined();
      const delay = delaysAfter[attempt - 1];
      if (delay === undefined) break;
      await expect
        .poll(() => nextAttemptAt(organizationId, endpointId), { timeout: 10_000 })
        .toBe(new Date(clock.now().getTime() + delay).toISOString());
      if (attempt === 1 || attempt === 4) {
        clock.advance(delay - second);
        await workerHasLookedNow();
        expect(partner.requests).toHaveLength(attempt);
        clock.advance(second);
      } else {
        clock.advance(delay);
      }
    }
    await expect
      .poll(async () => (await delivery(organizationId, endpointId))?.status, { timeout: 10_000 })
      .toBe(DeliveryStatus.FAILED);
    const failed = await delivery(organizationId, endpointId);
    expect(failed).toMatchObject({ attempts: 8, lastStatusCode: 500, lastError: "answered HTTP 500" });
    expect(failed?.nextAttemptAt).toBeUndefined();
    clock.advance(24 * hour);
    await workerHasLookedNow();
    expect(partner.requests).toHaveLength(8);
  });

  it("honours Retry-After when it asks for longer than the schedule, up to one hour", async () => {
    const organizationId = uniqueName("org");
    const answers = [
      { status: 503, headers: { "retry-after": "120" } },
      { status: 429, headers: { "retry-after": String(3 * 3600) } },
      { status: 204 },
    ];
    const partner = await receiver((request) => answers[partner.requests.indexOf(request)] ?? { status: 204 });
    const { endpointId } = await endpoint(organizationId, partner.url);
    await dispatcher.publish(gateEvent(organizationId));

    await expect.poll(() => partner.requests.length, { timeout: 10_000 }).toBe(1);
    await expect
      .poll(() => nextAttemptAt(organizationId, endpointId), { timeout: 10_000 })
      .toBe(new Date(clock.now().getTime() + 120 * second).toISOString());
    clock.advance(120 * second);
    await expect.poll(() => partner.requests.length, { timeout: 10_000 }).toBe(2);
    await expect
      .poll(() => nextAttemptAt(organizationId, endpointId), { timeout: 10_000 })
      .toBe(new Date(clock.now().getTime() + hour).toISOString());
    clock.advance(hour);
    await expect
      .poll(async () => (await delivery(organizationId, endpointId))?.status, { timeout: 10_000 })
      .toBe(DeliveryStatus.DELIVERED);
    expect(await delivery(organizationId, endpointId)).toMatchObject({
      attempts: 3,
      lastStatusCode: 204,
      lastError: "",
    });
  });

  it("after a rotation signs with both secrets for 24 hours, each verifying on its own, then with the new one only", async () => {
    const organizationId = uniqueName("org");
    const partner = await receiver();
    const { endpointId, secret: oldSecret } = await endpoint(organizationId, partner.url);
    const { secret: newSecret } = await dispatcher.console.rotateEndpointSecret({ organizationId, endpointId });
    await dispatcher.publish(gateEvent(organizationId));

    await expect.poll(() => partner.requests.length, { timeout: 10_000 }).toBe(1);
    const during = partner.requests[0]!;
    expect(String(during.headers["webhook-signature"]).split(" ")).toHaveLength(2);
    expect(verifyDelivery(oldSecret, during, clock.now())).toBeDefined();
    expect(verifyDelivery(newSecret, during, clock.now())).toBeDefined();

    clock.advance(24 * hour + second);
    await dispatcher.publish(gateEvent(organizationId));
    await expect.poll(() => partner.requests.length, { timeout: 10_000 }).toBe(2);
    const after = partner.requests[1]!;
    expect(String(after.headers["webhook-signature"]).split(" ")).toHaveLength(1);
    expect(verifyDelivery(newSecret, after, clock.now())).toBeDefined();
    expect(() => verifyDelivery(oldSecret, after, clock.now())).toThrow(WebhookVerificationError);
  });

  it("keeps at most four attempts in flight per endpoint, so a slow endpoint does not hold up a fast one", async () => {
    const organizationId = uniqueName("org");
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const slow = await receiver(async () => {
      await released;
      return { status: 204 };
    });
    const fast = await receiver();
    await endpoint(organizationId, slow.url);
    await endpoint(organizationId, fast.url);
    const events: Event[] = Array.from({ length: 12 }, () => gateEvent(organizationId));
    for (const event of events) await dispatcher.publish(event);

    await expect.poll(() => fast.requests.length, { timeout: 10_000 }).toBe(12);
    expect(slow.requests).toHaveLength(4);
    release();
    await expect.poll(() => slow.requests.length, { timeout: 10_000 }).toBe(12);
    expect(slow.maxConcurrent).toBe(4);
  });
});
