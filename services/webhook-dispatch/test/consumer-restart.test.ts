import { jetstreamManager } from "@nats-io/jetstream";
import { connectEventBus } from "@svc/platform";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { natsUrl, uniqueName } from "../../../test/harness/index.ts";
import { restartDelayMs } from "../src/delivery/event-consumer.ts";
import { startTestDispatcher, type TestDispatcher } from "./support/dispatcher.ts";
import { gateEvent } from "./support/events.ts";
import { type Receiver, startReceiver } from "./support/receiver.ts";

describe("the event consumer after it stopped on an error", () => {
  let dispatcher: TestDispatcher;
  let receiver: Receiver;
  const organizationId = uniqueName("org");

  beforeAll(async () => {
    dispatcher = await startTestDispatcher("wh_consumer_restart");
    receiver = await startReceiver();
    await dispatcher.console.addEndpoint({ organizationId, url: receiver.url, types: [] });
  });
  afterAll(async () => {
    await dispatcher?.stop();
    await receiver?.close();
  });

  const stream = () => dispatcher.env.SVC_EVENT_STREAM!;
  const readiness = async () => {
    const response = await fetch(`${dispatcher.service.url}/readyz`);
    return { status: response.status, body: (await response.json()) as { error?: string } };
  };
  const deliversNextEvent = async () => {
    const before = receiver.requests.length;
    await dispatcher.publish(gateEvent(organizationId));
    await expect.poll(() => receiver.requests.length).toBe(before + 1);
  };

  it("waits longer after each failure in a row, never more than 30 s", () => {
    expect([1, 2, 3, 4, 5, 6, 7, 100].map(restartDelayMs)).toEqual([
      1000, 2000, 4000, 8000, 16_000, 30_000, 30_000, 30_000,
    ]);
  });

  it("recreates its durable consumer when it was deleted, and goes on delivering", async () => {
    await deliversNextEvent();
    await (await jetstreamManager(dispatcher.bus.nc)).consumers.delete(stream(), "webhook-dispatch");
    await deliversNextEvent();
    await expect.poll(async () => (await readiness()).status).toBe(200);
  });

  it("reports not ready while it cannot restart, and ready again once it has", async () => {
    const subjectPrefix = dispatcher.env.SVC_EVENT_SUBJECT_PREFIX!;
    await (await jetstreamManager(dispatcher.bus.nc)).streams.delete(stream());
    // Without the stream the consumer cannot be recreated: it stays down until the stream is back.
    await expect.poll(readiness).toEqual({
      status: 503,
      body: expect.objectContaining({ error: "event consumer webhook-dispatch is down: stream not found" }),
    });

    const restored = await connectEventBus({
      url: natsUrl(),
      name: "wh-consumer-restart-restore",
      stream: stream(),
      subjectPrefix,
    });
    await restored.nc.drain();
    await expect.poll(async () => (await readiness()).status, { timeout: 20_000 }).toBe(200);
    await deliversNextEvent();
  });
});
