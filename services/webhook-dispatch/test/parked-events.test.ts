import { randomUUID } from "node:crypto";
import { create, toBinary } from "@bufbuild/protobuf";
import { BinaryWriter, WireType } from "@bufbuild/protobuf/wire";
import { jetstreamManager } from "@nats-io/jetstream";
import { type LogFields, type Logger, ManualClock, type RunningService } from "@svc/platform";
import { Environment } from "@svc/proto/common/v1/caller_pb.js";
import { EventSchema } from "@svc/proto/events/v1/events_pb.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { uniqueName } from "../../../test/harness/index.ts";
import { startWebhookDispatch } from "../src/server.ts";
import { startTestDispatcher, type TestDispatcher } from "./support/dispatcher.ts";
import { at, gateEvent } from "./support/events.ts";
import { type Receiver, startReceiver } from "./support/receiver.ts";

type LogEntry = { level: string; msg: string; fields?: LogFields };

function recordingLogger(entries: LogEntry[]): Logger {
  const write = (level: string) => (msg: string, fields?: LogFields) => void entries.push({ level, msg, fields });
  const logger: Logger = {
    debug: write("debug"),
    info: write("info"),
    warn: write("warn"),
    error: write("error"),
    child: () => logger,
  };
  return logger;
}

/**
 * An envelope as a newer producer builds it: the routing facts this build knows, and a payload case
 * (field 30 of the oneof) it does not, which it decodes only as unknown bytes.
 */
function newerTypeEnvelope(organizationId: string): { dedupKey: string; bytes: Uint8Array } {
  const dedupKey = `gate.newer_type:${randomUUID()}`;
  const known = toBinary(
    EventSchema,
    create(EventSchema, {
      dedupKey,
      organizationId,
      environment: Environment.DEVELOPMENT,
      occurredAt: at("2026-11-22T10:00:00Z"),
    }),
  );
  const payload = new BinaryWriter().tag(1, WireType.LengthDelimited).string("req_123").finish();
  const unknownCase = new BinaryWriter().tag(30, WireType.LengthDelimited).bytes(payload).finish();
  return { dedupKey, bytes: Buffer.concat([known, unknownCase]) };
}

describe("events of a type this build does not know", () => {
  const clock = new ManualClock(new Date());
  let dispatcher: TestDispatcher;
  let receiver: Receiver;
  let upgraded: RunningService | undefined;
  const organizationId = uniqueName("org");
  const newer = newerTypeEnvelope(organizationId);
  const newerSubject = () => dispatcher.bus.subject("gate.newer_type");

  beforeAll(async () => {
    dispatcher = await startTestDispatcher("wh_parked", { clock });
    receiver = await startReceiver();
    await dispatcher.console.addEndpoint({ organizationId, url: receiver.url, types: [] });
  });
  afterAll(async () => {
    await upgraded?.stop();
    await dispatcher?.stop();
    await receiver?.close();
  });

  const consumerInfo = async () =>
    (await jetstreamManager(dispatcher.bus.nc)).consumers.info(dispatcher.env.SVC_EVENT_STREAM!, "webhook-dispatch");
  const parked = () =>
    dispatcher.sql<{ dedup_key: string; subject: string; envelope: Buffer }>(
      "select dedup_key, subject, envelope from parked_events order by dedup_key",
    );

  it("are parked byte for byte and acknowledged, so none stays pending on the consumer", async () => {
    await dispatcher.bus.js.publish(newerSubject(), newer.bytes, { msgID: newer.dedupKey });
    // The same event again under another message id, as a producer's re-publish after the duplicate window.
    await dispatcher.bus.js.publish(newerSubject(), newer.bytes, { msgID: `${newer.dedupKey}#again` });
    await dispatcher.publish(gateEvent(organizationId));

    await expect.poll(() => receiver.requests.length).toBe(1);
    await expect.poll(async () => (await consumerInfo()).num_ack_pending).toBe(0);
    expect((await consumerInfo()).num_pending).toBe(0);
    const rows = await parked();
    expect(rows.map((r) => [r.dedup_key, r.subject])).toEqual([[newer.dedupKey, newerSubject()]]);
    expect(rows[0]!.envelope.equals(Buffer.from(newer.bytes))).toBe(true);
    expect(await dispatcher.sql("select 1 from messages where dedup_key = $1", [newer.dedupKey])).toHaveLength(0);
  });

  it("are delivered when a build that knows their type starts, each once, and leave the parked ones", async () => {
    // What an older build, which did not know these types, parked: one event never stored, and one
    // whose message is already stored and delivered (parked again by a stale replica, say).
    const unseen = gateEvent(organizationId);
    const [delivered] = await dispatcher.sql<{ dedup_key: string }>(
      "select dedup_key from messages where organization_id = $1",
      [organizationId],
    );
    const firstRequest = receiver.requests[0]!;
    for (const [dedupKey, bytes] of [
      [unseen.dedupKey, toBinary(EventSchema, unseen)],
      [delivered!.dedup_key, toBinary(EventSchema, gateEventWithKey(organizationId, delivered!.dedup_key))],
    ] as const) {
      await dispatcher.sql(
        "insert into parked_events (dedup_key, subject, envelope, parked_at) values ($1, $2, $3, now())",
        [dedupKey, dispatcher.bus.subject("gate.human_verified"), Buffer.from(bytes)],
      );
    }

    await dispatcher.service.stop();
    const logs: LogEntry[] = [];
    upgraded = await startWebhookDispatch({ env: dispatcher.env, clock, logger: recordingLogger(logs) });

    await expect.poll(() => receiver.requests.length).toBe(2);
    const [stored] = await dispatcher.sql<{ id: string }>("select id from messages where dedup_key = $1", [
      unseen.dedupKey,
    ]);
    expect(receiver.requests[1]!.webhookId).toBe(stored!.id);
    expect(receiver.requests[1]!.json).toMatchObject({
      type: "gate.human_verified",
      request_id: (unseen.payload.value as { requestId: string }).requestId,
    });
    // The message stored before got no second message and no second delivery.
    expect(await dispatcher.sql("select 1 from messages where dedup_key = $1", [delivered!.dedup_key])).toHaveLength(1);
    expect(
      await dispatcher.sql(
        "select d.attempts from deliveries d join messages m on m.id = d.message_id where m.dedup_key = $1",
        [delivered!.dedup_key],
      ),
    ).toEqual([{ attempts: 1 }]);
    expect(receiver.requests.filter((r) => r.webhookId === firstRequest.webhookId)).toHaveLength(1);

    expect((await parked()).map((r) => r.dedup_key)).toEqual([newer.dedupKey]);
    expect(logs).toContainEqual({
      level: "warn",
      msg: "events of types this build does not know are parked; a build that knows them delivers them when it starts",
      fields: { events: 1, bySubject: { [newerSubject()]: 1 } },
    });
  });
});

/** A gate event under a given dedup key (the key of a message stored before). */
function gateEventWithKey(organizationId: string, dedupKey: string) {
  const event = gateEvent(organizationId);
  event.dedupKey = dedupKey;
  return event;
}
