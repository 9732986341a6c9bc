import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { fileURLToPath } from "node:url";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { connectEventBus, type EventBus } from "@svc/platform";
import { WebhookConsoleService } from "@svc/proto/webhook/v1/webhook_pb.js";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../../../deploy/local/src/process-tools.ts";
import { createTestDatabase, natsUrl, type TestDatabase, uniqueName } from "../../../test/harness/index.ts";
import { gateEvent, publish } from "./support/events.ts";
import { type Receiver, startReceiver, verifyDelivery } from "./support/receiver.ts";

const entry = fileURLToPath(new URL("../src/server.ts", import.meta.url));
const burst = 600;
/** SIGKILLs while the burst is still arriving: each one can land in the middle of storing a batch. */
const kills = 2;

describe("a dispatcher killed with SIGKILL in the middle of a burst", () => {
  let database: TestDatabase;
  let receiver: Receiver;
  let bus: EventBus;
  let env: Record<string, string>;
  let child: ChildProcess | undefined;
  const output: string[] = [];

  const startProcess = async () => {
    const started = spawn(process.execPath, [entry], {
      env: { ...process.env, ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    started.stdout!.on("data", (chunk: Buffer) => output.push(chunk.toString()));
    started.stderr!.on("data", (chunk: Buffer) => output.push(chunk.toString()));
    child = started;
    const url = `http://127.0.0.1:${env.WEBHOOK_DISPATCH_PORT}/readyz`;
    await expect
      .poll(async () => (await fetch(url).catch(() => undefined))?.status, { timeout: 20_000, interval: 100 })
      .toBe(200);
  };

  beforeAll(async () => {
    database = await createTestDatabase("wh_crash");
    const stream = uniqueName("wh_crash").toUpperCase();
    env = {
      SVC_DATABASE_URL: database.url,
      SVC_NATS_URL: natsUrl(),
      SVC_EVENT_STREAM: stream,
      SVC_EVENT_SUBJECT_PREFIX: `ev_${stream.toLowerCase()}`,
      SVC_LOG_LEVEL: "warn",
      WEBHOOK_DISPATCH_PORT: String(await freePort()),
      // Short enough that leases and unacknowledged events come back within the test.
      WEBHOOK_DISPATCH_DELIVERY_TIMEOUT: "500ms",
      WEBHOOK_DISPATCH_ACK_WAIT: "2s",
      WEBHOOK_DISPATCH_POLL_INTERVAL: "100ms",
    };
    // Each answer takes a little while, so the burst is still being delivered when the process dies.
    receiver = await startReceiver(() => new Promise((resolve) => setTimeout(() => resolve({ status: 204 }), 10)));
    bus = await connectEventBus({
      url: natsUrl(),
      name: "wh-crash-publisher",
      stream,
      subjectPrefix: env.SVC_EVENT_SUBJECT_PREFIX!,
    });
  });
  afterAll(async () => {
    if (child && child.exitCode === null && child.signalCode === null) {
      child.kill("SIGTERM");
      await once(child, "exit");
    }
    await bus?.nc.drain();
    await receiver?.close();
    await database?.drop();
  });

  it("loses no message: every webhook-id reaches the receiver, repeated only as a retry of the same message", async () => {
    await startProcess();
    const console = createClient(
      WebhookConsoleService,
      createConnectTransport({ baseUrl: `http://127.0.0.1:${env.WEBHOOK_DISPATCH_PORT}`, httpVersion: "2" }),
    );
    const organizationId = uniqueName("org");
    const { secret } = await console.addEndpoint({ organizationId, url: receiver.url, types: [] });

    const events = Array.from({ length: burst }, () => gateEvent(organizationId));
    // Published at a steady pace, so that batches are being stored, queued and sent at each kill.
    const publishing = (async () => {
      for (const event of events) {
        await publish(bus, event);
        await new Promise((resolve) => setTimeout(resolve, 3));
      }
    })();
    for (let kill = 1; kill <= kills; kill += 1) {
      const seen = receiver.requests.length;
      await expect
        .poll(() => receiver.requests.length, { timeout: 20_000, interval: 5 })
        .toBeGreaterThanOrEqual(seen + burst / 10);
      child!.kill("SIGKILL");
      await once(child!, "exit");
      expect(new Set(receiver.requests.map((r) => r.webhookId)).size).toBeLessThan(burst);
      if (kill < kills) await startProcess();
    }
    await publishing;

    await startProcess();
    await expect
      .poll(() => new Set(receiver.requests.map((r) => r.webhookId)).size, { timeout: 40_000, interval: 100 })
      .toBe(burst);

    const bodies = new Map<string, string>();
    for (const request of receiver.requests) {
      const body = request.body.toString();
      expect(bodies.get(request.webhookId) ?? body, "a repeated webhook-id carries the same message").toBe(body);
      bodies.set(request.webhookId, body);
    }
    const requestIds = [...bodies.values()]
      .map((body) => (JSON.parse(body) as { request_id: string }).request_id)
      .sort();
    expect(requestIds).toEqual(events.map((e) => (e.payload.value as { requestId: string }).requestId).sort());
    expect(verifyDelivery(secret, receiver.requests.at(-1)!, new Date())).toBeDefined();

    const db = new pg.Client({ connectionString: database.url, options: "-c search_path=webhook_dispatch" });
    await db.connect();
    try {
      // Attempts that were in flight at the kill have no result until their lease ends and they are sent again.
      const counts = async () =>
        (
          await db.query(
            "select count(distinct m.id)::int as messages, count(*) filter (where d.status = 'delivered')::int as delivered from messages m join deliveries d on d.message_id = m.id",
          )
        ).rows[0];
      await expect.poll(counts, { timeout: 30_000, interval: 200 }).toEqual({ messages: burst, delivered: burst });
    } finally {
      await db.end();
    }
  }, 90_000);
});
