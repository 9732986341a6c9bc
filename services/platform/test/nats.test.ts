import { jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import {
  ConfigError,
  connectEventBus,
  type EventBus,
  eventStreamSettings,
  loadConfig,
  natsReachable,
} from "@svc/platform";
import { afterAll, describe, expect, it } from "vitest";
import { natsUrl, uniqueName } from "../../../test/harness/index.ts";

const hourNs = 3600 * 1e9;
const dayNs = 24 * hourNs;

describe("the event stream", () => {
  const buses: EventBus[] = [];
  const connectBus = async (stream: string, options: { maxAgeMs?: number } = {}) => {
    const bus = await connectEventBus({
      url: natsUrl(),
      name: "nats-test",
      stream,
      subjectPrefix: stream.toLowerCase(),
      ...options,
    });
    buses.push(bus);
    return bus;
  };
  const streamConfig = async (bus: EventBus) =>
    (await (await jetstreamManager(bus.nc)).streams.info(bus.stream)).config;

  afterAll(async () => {
    await Promise.all(buses.map((bus) => bus.nc.drain()));
  });

  it("is created keeping events for 7 days, with the one-hour duplicate window", async () => {
    const bus = await connectBus(uniqueName("stream").toUpperCase());
    expect(await streamConfig(bus)).toMatchObject({
      max_age: 7 * dayNs,
      duplicate_window: hourNs,
      subjects: [`${bus.subjectPrefix}.>`],
    });
  });

  it("takes SVC_EVENT_STREAM_MAX_AGE, and brings a stream made without a max age to it, keeping its subjects and duplicate window", async () => {
    const stream = uniqueName("stream").toUpperCase();
    const nc = await connect({ servers: natsUrl() });
    // As an older build created it: no max age.
    await (await jetstreamManager(nc)).streams.add({
      name: stream,
      subjects: [`${stream.toLowerCase()}.>`],
      duplicate_window: hourNs,
    });
    await nc.drain();

    const { eventStreamMaxAge } = loadConfig("SVC", eventStreamSettings, { SVC_EVENT_STREAM_MAX_AGE: "3d" });
    const bus = await connectBus(stream, { maxAgeMs: eventStreamMaxAge });
    expect(await streamConfig(bus)).toMatchObject({
      max_age: 3 * dayNs,
      duplicate_window: hourNs,
      subjects: [`${stream.toLowerCase()}.>`],
    });

    await connectBus(stream, { maxAgeMs: 10 * 86_400_000 });
    expect((await streamConfig(bus)).max_age).toBe(10 * dayNs);
  });

  it("refuses a max age under a day, naming the variable", () => {
    const refused = (() => {
      try {
        return loadConfig("SVC", eventStreamSettings, { SVC_EVENT_STREAM_MAX_AGE: "2h" });
      } catch (error) {
        return error;
      }
    })();
    expect(refused).toBeInstanceOf(ConfigError);
    expect((refused as Error).message).toContain("SVC_EVENT_STREAM_MAX_AGE: must be at least 1d");
  });

  it("is not ready while one of the process's consumers is down", async () => {
    const bus = await connectBus(uniqueName("stream").toUpperCase());
    await expect(natsReachable(bus)).resolves.toBeUndefined();
    bus.consumersDown.set("webhook-dispatch", "consumer deleted");
    await expect(natsReachable(bus)).rejects.toThrow("event consumer webhook-dispatch is down: consumer deleted");
    bus.consumersDown.delete("webhook-dispatch");
    await expect(natsReachable(bus)).resolves.toBeUndefined();
  });
});
