import { timestampMs } from "@bufbuild/protobuf/wkt";
import { Code, type ConnectError } from "@connectrpc/connect";
import { ManualClock } from "@svc/platform";
import { DeliveryStatus, EndpointStatus } from "@svc/proto/webhook/v1/webhook_pb.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { uniqueName } from "../../../test/harness/index.ts";
import { startTestDispatcher, type TestDispatcher } from "./support/dispatcher.ts";
import { gateEvent, oneOfEachType } from "./support/events.ts";
import { type Receiver, startReceiver } from "./support/receiver.ts";

const minute = 60_000;
const day = 24 * 60 * minute;

describe("failed messages, replay and automatic disabling", () => {
  const clock = new ManualClock(new Date());
  let dispatcher: TestDispatcher;
  const receivers: Receiver[] = [];

  const receiver = async (...args: Parameters<typeof startReceiver>) => {
    const started = await startReceiver(...args);
    receivers.push(started);
    return started;
  };
  const endpoint = async (organizationId: string, url: string, types: string[] = []) =>
    dispatcher.console.addEndpoint({ organizationId, url, types });
  const messages = async (organizationId: string, endpointId?: string) =>
    (await dispatcher.console.listMessages({ organizationId, endpointId })).messages;
  const endpointStatus = async (organizationId: string, endpointId: string) =>
    (await dispatcher.console.listEndpoints({ organizationId })).endpoints.find((e) => e.endpointId === endpointId);
  /**
   * Waits until `attempts` attempts were made and each one's result is written: no delivery is still
   * leased, so each is delivered, failed, or pending for the schedule's one-minute retry.
   */
  const settled = (organizationId: string, endpointId: string, attempts: number) =>
    expect
      .poll(
        async () => {
          const deliveries = (await messages(organizationId, endpointId)).flatMap((m) => m.deliveries);
          const written = deliveries.every(
            (d) =>
              d.status !== DeliveryStatus.PENDING ||
              (d.nextAttemptAt &&
                d.lastAttemptAt &&
                timestampMs(d.nextAttemptAt) - timestampMs(d.lastAttemptAt) === minute),
          );
          return written ? deliveries.reduce((sum, d) => sum + d.attempts, 0) : "attempts in flight";
        },
        { timeout: 10_000 },
      )
      .toBe(attempts);

  beforeAll(async () => {
    // Two attempts, a minute apart, so a message fails quickly.
    dispatcher = await startTestDispatcher("wh_failures", {
      clock,
      env: { WEBHOOK_DISPATCH_RETRY_SCHEDULE: "0,1m", WEBHOOK_DISPATCH_RETRY_JITTER_PERCENT: "0" },
    });
  });
  afterAll(async () => {
    await dispatcher?.stop();
    await Promise.all(receivers.map((r) => r.close()));
  });

  it("a message that failed every attempt is failed, and a replay sends it again under the same webhook-id", async () => {
    const organizationId = uniqueName("org");
    let answer = 500;
    const partner = await receiver(() => ({ status: answer }));
    const { endpointId } = await endpoint(organizationId, partner.url);
    await dispatcher.publish(gateEvent(organizationId));
    await expect.poll(() => partner.requests.length, { timeout: 10_000 }).toBe(1);
    await settled(organizationId, endpointId, 1);
    clock.advance(minute);
    await expect
      .poll(async () => (await messages(organizationId, endpointId))[0]?.deliveries[0]?.status, { timeout: 10_000 })
      .toBe(DeliveryStatus.FAILED);
    const [failed] = await messages(organizationId, endpointId);
    expect(failed?.deliveries[0]).toMatchObject({ attempts: 2, lastStatusCode: 500 });

    answer = 204;
    const replay = await dispatcher.console.replayMessage({ organizationId, messageId: failed!.messageId, endpointId });
    expect(replay.delivery?.status).toBe(DeliveryStatus.PENDING);
    await expect
      .poll(async () => (await messages(organizationId, endpointId))[0]?.deliveries[0]?.status, { timeout: 10_000 })
      .toBe(DeliveryStatus.DELIVERED);
    expect(partner.requests).toHaveLength(3);
    expect(new Set(partner.requests.map((r) => r.webhookId))).toEqual(new Set([failed!.messageId]));
    expect((await messages(organizationId, endpointId))[0]?.deliveries[0]).toMatchObject({
      attempts: 3,
      lastStatusCode: 204,
      lastError: "",
    });
  });

  it("any stored message can be replayed to one endpoint, also one added after it; never across organizations", async () => {
    const organizationId = uniqueName("org");
    await dispatcher.publish(gateEvent(organizationId));
    await expect.poll(async () => (await messages(organizationId)).length, { timeout: 10_000 }).toBe(1);
    const [stored] = await messages(organizationId);
    expect(stored?.deliveries).toEqual([]);

    const late = await receiver();
    const { endpointId } = await endpoint(organizationId, late.url);
    await dispatcher.console.replayMessage({ organizationId, messageId: stored!.messageId, endpointId });
    await expect.poll(() => late.requests.length, { timeout: 10_000 }).toBe(1);
    expect(late.requests[0]?.webhookId).toBe(stored!.messageId);

    const stranger = uniqueName("org");
    const strangerEndpoint = await endpoint(stranger, late.url);
    const error = await dispatcher.console
      .replayMessage({
        organizationId: stranger,
        messageId: stored!.messageId,
        endpointId: strangerEndpoint.endpointId,
      })
      .catch((e: unknown) => e);
    expect((error as ConnectError).code).toBe(Code.NotFound);
  });

  it("replay refuses an endpoint that is disabled or whose filter leaves the type out", async () => {
    const organizationId = uniqueName("org");
    const partner = await receiver();
    const filtered = await endpoint(organizationId, partner.url, ["account.secured"]);
    const disabled = await endpoint(organizationId, partner.url);
    await dispatcher.console.disableEndpoint({ organizationId, endpointId: disabled.endpointId });
    await dispatcher.publish(gateEvent(organizationId));
    await expect.poll(async () => (await messages(organizationId)).length, { timeout: 10_000 }).toBe(1);
    const [stored] = await messages(organizationId);

    for (const [endpointId, message] of [
      [
        filtered.endpointId,
        `endpoint ${filtered.endpointId} does not receive gate.human_verified (its filter: account.secured)`,
      ],
      [disabled.endpointId, `endpoint ${disabled.endpointId} is disabled; enable it before replaying to it`],
    ] as const) {
      const error = (await dispatcher.console
        .replayMessage({ organizationId, messageId: stored!.messageId, endpointId })
        .catch((e: unknown) => e)) as ConnectError;
      expect(error.code).toBe(Code.FailedPrecondition);
      expect(error.rawMessage).toBe(message);
    }
    expect(partner.requests).toHaveLength(0);
  });

  it("an endpoint whose every attempt failed for five days is disabled, with the reason in the list", async () => {
    const organizationId = uniqueName("org");
    const partner = await receiver(() => ({ status: 502 }));
    const { endpointId } = await endpoint(organizationId, partner.url);
    const firstFailureAt = clock.now();
    await dispatcher.publish(gateEvent(organizationId));
    await settled(organizationId, endpointId, 1);

    clock.advance(4 * day);
    await dispatcher.publish(gateEvent(organizationId));
    await settled(organizationId, endpointId, 3);
    expect((await endpointStatus(organizationId, endpointId))?.status).toBe(EndpointStatus.ENABLED);

    clock.advance(day);
    await dispatcher.publish(gateEvent(organizationId));
    await expect
      .poll(async () => (await endpointStatus(organizationId, endpointId))?.status, { timeout: 10_000 })
      .toBe(EndpointStatus.DISABLED);
    const disabled = await endpointStatus(organizationId, endpointId);
    expect(disabled?.disabledReason).toBe(
      `disabled automatically: every delivery attempt since ${firstFailureAt.toISOString().replace(/\.\d{3}Z$/, "Z")} failed`,
    );

    // A disabled endpoint gets no delivery for a new event; the message is still kept for replay.
    await dispatcher.publish(gateEvent(organizationId));
    await expect.poll(async () => (await messages(organizationId)).length, { timeout: 10_000 }).toBe(4);
    expect((await messages(organizationId))[0]?.deliveries).toEqual([]);

    const enabled = await dispatcher.console.enableEndpoint({ organizationId, endpointId });
    expect(enabled.endpoint).toMatchObject({ status: EndpointStatus.ENABLED, disabledReason: "" });
  });

  it("a success in between starts the five days over", async () => {
    const organizationId = uniqueName("org");
    let answer = 500;
    const partner = await receiver(() => ({ status: answer }));
    const { endpointId } = await endpoint(organizationId, partner.url);
    await dispatcher.publish(gateEvent(organizationId));
    await settled(organizationId, endpointId, 1);

    clock.advance(3 * day);
    answer = 204;
    await dispatcher.publish(gateEvent(organizationId));
    await settled(organizationId, endpointId, 3);

    answer = 500;
    clock.advance(2 * day + minute);
    await dispatcher.publish(gateEvent(organizationId));
    await settled(organizationId, endpointId, 4);
    expect((await endpointStatus(organizationId, endpointId))?.status).toBe(EndpointStatus.ENABLED);
  });

  it("disabling gives back the deliveries a worker claimed but had not started; they go out once enabled", async () => {
    const organizationId = uniqueName("org");
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const slow = await receiver(async () => {
      await released;
      return { status: 204 };
    });
    const { endpointId } = await endpoint(organizationId, slow.url);
    for (let i = 0; i < 12; i += 1) await dispatcher.publish(gateEvent(organizationId));
    await expect.poll(async () => (await messages(organizationId, endpointId)).length, { timeout: 10_000 }).toBe(12);
    await expect.poll(() => slow.requests.length, { timeout: 10_000 }).toBe(4);

    await dispatcher.console.disableEndpoint({ organizationId, endpointId });
    release();
    const deliveries = async () =>
      (await messages(organizationId, endpointId))
        .map((m) => `${m.deliveries[0]?.status}/${m.deliveries[0]?.attempts}`)
        .sort();
    const expected = [
      ...Array(4).fill(`${DeliveryStatus.DELIVERED}/1`),
      ...Array(8).fill(`${DeliveryStatus.PENDING}/0`),
    ].sort();
    await expect.poll(deliveries, { timeout: 10_000 }).toEqual(expected);
    expect(slow.requests).toHaveLength(4);

    await dispatcher.console.enableEndpoint({ organizationId, endpointId });
    await expect.poll(() => slow.requests.length, { timeout: 10_000 }).toBe(12);
    expect(new Set(slow.requests.map((r) => r.webhookId)).size).toBe(12);
  });

  it("deliveries pending when an endpoint is disabled are held, and resume when it is enabled", async () => {
    const organizationId = uniqueName("org");
    let answer = 500;
    const partner = await receiver(() => ({ status: answer }));
    const { endpointId } = await endpoint(organizationId, partner.url);
    const events = oneOfEachType(organizationId).slice(0, 3);
    for (const event of events) await dispatcher.publish(event);
    await settled(organizationId, endpointId, 3);

    await dispatcher.console.disableEndpoint({ organizationId, endpointId });
    answer = 204;
    clock.advance(2 * minute);
    const sentinel = await receiver();
    const sentinelOrg = uniqueName("org");
    await endpoint(sentinelOrg, sentinel.url);
    await dispatcher.publish(gateEvent(sentinelOrg));
    await expect.poll(() => sentinel.requests.length, { timeout: 10_000 }).toBe(1);
    expect(partner.requests).toHaveLength(3);
    expect((await messages(organizationId, endpointId)).map((m) => m.deliveries[0]?.status)).toEqual([
      DeliveryStatus.PENDING,
      DeliveryStatus.PENDING,
      DeliveryStatus.PENDING,
    ]);

    await dispatcher.console.enableEndpoint({ organizationId, endpointId });
    await expect.poll(() => partner.requests.length, { timeout: 10_000 }).toBe(6);
    await expect
      .poll(async () => (await messages(organizationId, endpointId)).map((m) => m.deliveries[0]?.status), {
        timeout: 10_000,
      })
      .toEqual([DeliveryStatus.DELIVERED, DeliveryStatus.DELIVERED, DeliveryStatus.DELIVERED]);
  });
});
