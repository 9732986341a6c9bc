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
import { type Receiver, startReceiver } from "./support/receiver.ts";

const entry = fileURLToPath(new URL("../src/server.ts", import.meta.url));
/** Deliveries the killed dispatcher holds: more than one release batch would need at the defaults' 16 in flight. */
const held = 200;

/**
 * A real dispatcher process holding `held` claims (16 attempts in flight to an endpoint that does not
 * answer, the rest queued behind them under leases of minutes) is killed with SIGKILL. The next one
 * finds its lock dropped and gives every claim back at once: all of them are delivered, each once
 * after the restart, under the message's own webhook-id.
 */
describe("a dispatcher killed with SIGKILL while it holds many claims", () => {
  let database: TestDatabase;
  let receiver: Receiver;
  let bus: EventBus;
  let db: pg.Client;
  let env: Record<string, string>;
  let child: ChildProcess | undefined;
  let answer: "hold" | "accept" = "hold";
  const waiting: (() => void)[] = [];

  const startProcess = async () => {
    const started = spawn(process.execPath, [entry], { env: { ...process.env, ...env }, stdio: "ignore" });
    child = started;
    const url = `http://127.0.0.1:${env.WEBHOOK_DISPATCH_PORT}/readyz`;
    await expect
      .poll(async () => (await fetch(url).catch(() => undefined))?.status, { timeout: 20_000, interval: 100 })
      .toBe(200);
  };

  beforeAll(async () => {
    database = await createTestDatabase("wh_kill");
    const stream = uniqueName("wh_kill").toUpperCase();
    env = {
      SVC_DATABASE_URL: database.url,
      SVC_NATS_URL: natsUrl(),
      SVC_EVENT_STREAM: stream,
      SVC_EVENT_SUBJECT_PREFIX: `ev_${stream.toLowerCase()}`,
      SVC_LOG_LEVEL: "warn",
      WEBHOOK_DISPATCH_PORT: String(await freePort()),
      WEBHOOK_DISPATCH_PER_ENDPOINT_CONCURRENCY: "16",
      // Leases of minutes: anything delivered soon after the restart came back by release.
      WEBHOOK_DISPATCH_DELIVERY_TIMEOUT: "60s",
      WEBHOOK_DISPATCH_POLL_INTERVAL: "100ms",
    };
    receiver = await startReceiver(() =>
      answer === "accept" ? { status: 204 } : new Promise((resolve) => waiting.push(() => resolve({ status: 204 }))),
    );
    bus = await connectEventBus({
      url: natsUrl(),
      name: "wh-kill-publisher",
      stream,
      subjectPrefix: env.SVC_EVENT_SUBJECT_PREFIX!,
    });
    db = new pg.Client({ connectionString: database.url, options: "-c search_path=webhook_dispatch" });
    await db.connect();
  });
  afterAll(async () => {
    if (child && child.exitCode === null && child.signalCode === null) {
      child.kill("SIGTERM");
      await once(child, "exit");
    }
    for (const release of waiting) release();
    await db?.end();
    await bus?.nc.drain();
    await receiver?.close();
    await database?.drop();
  });

  const count = async (where: string) =>
    (await db.query<{ n: number }>(`select count(*)::int as n from deliveries where ${where}`)).rows[0]!.n;

  it("delivers every claim of the dead dispatcher after the restart, each once, with the same webhook-id", async () => {
    await startProcess();
    const console = createClient(
      WebhookConsoleService,
      createConnectTransport({ baseUrl: `http://127.0.0.1:${env.WEBHOOK_DISPATCH_PORT}`, httpVersion: "2" }),
    );
    const organizationId = uniqueName("org");
    await console.addEndpoint({ organizationId, url: receiver.url, types: [] });
    const events = Array.from({ length: held }, () => gateEvent(organizationId));
    for (const event of events) await publish(bus, event);

    await expect
      .poll(() => count(`status = 'pending' and claimed_by is not null`), { timeout: 30_000, interval: 100 })
      .toBe(held);
    const [holder] = (await db.query<{ id: string }>(`select id from dispatcher_instances`)).rows;
    expect(await count(`claimed_by = '${holder!.id}'`)).toBe(held);
    const inFlight = new Set(receiver.requests.map((r) => r.webhookId));
    expect(inFlight.size).toBeGreaterThan(0);

    child!.kill("SIGKILL");
    await once(child!, "exit");
    answer = "accept";
    const before = receiver.requests.length;
    await startProcess();

    await expect.poll(() => count(`status = 'delivered'`), { timeout: 60_000, interval: 100 }).toBe(held);
    const after = receiver.requests.slice(before);
    const ids = after.map((r) => r.webhookId);
    expect(ids).toHaveLength(held);
    expect(new Set(ids).size).toBe(held);
    const messageIds = (await db.query<{ id: string }>(`select id from messages`)).rows.map((r) => r.id).sort();
    expect([...ids].sort()).toEqual(messageIds);
    // What the dead one had in flight came again under the same webhook-id, carrying the same message.
    for (const id of inFlight) expect(ids).toContain(id);
    expect(await count(`claimed_by = '${holder!.id}'`)).toBe(0);
    const instances = (await db.query<{ id: string }>(`select id from dispatcher_instances`)).rows.map((r) => r.id);
    expect(instances).not.toContain(holder!.id);
  }, 120_000);
});
