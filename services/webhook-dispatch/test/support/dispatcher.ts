import { type Client, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { type Clock, connectEventBus, createLogger, type EventBus, type RunningService } from "@svc/platform";
import type { Event } from "@svc/proto/events/v1/events_pb.js";
import { WebhookCallbackService, WebhookConsoleService } from "@svc/proto/webhook/v1/webhook_pb.js";
import pg from "pg";
import { createTestDatabase, natsUrl, type TestDatabase, uniqueName } from "../../../../test/harness/index.ts";
import { startWebhookDispatch } from "../../src/server.ts";
import { type AgentlinkCallbacks, startAgentlinkCallbacks } from "./agentlink-callbacks.ts";
import { publish } from "./events.ts";

export interface TestDispatcher {
  service: RunningService;
  console: Client<typeof WebhookConsoleService>;
  callbacks: Client<typeof WebhookCallbackService>;
  /** What the service is told about agents' callback targets (none unless a test adds one). */
  agentlink: AgentlinkCallbacks;
  bus: EventBus;
  /** The settings the service ran with: another process can join the same database and stream. */
  env: Record<string, string>;
  publish(event: Event, msgId?: string): Promise<void>;
  /** Raw SQL in the service's schema, for what no RPC shows (the schedule, the stored secret). */
  sql<R extends pg.QueryResultRow>(text: string, params?: unknown[]): Promise<R[]>;
  stop(): Promise<void>;
}

/**
 * webhook-dispatch in this process on its own database, stream and subjects, with the worker
 * polling every 20 ms of real time while what is due comes from the given clock.
 */
export async function startTestDispatcher(
  label: string,
  options: { clock?: Clock; env?: Record<string, string> } = {},
): Promise<TestDispatcher> {
  const database: TestDatabase = await createTestDatabase(label);
  const agentlink = await startAgentlinkCallbacks();
  const stream = uniqueName(label).toUpperCase();
  const env: Record<string, string> = {
    SVC_DATABASE_URL: database.url,
    SVC_NATS_URL: natsUrl(),
    SVC_EVENT_STREAM: stream,
    SVC_EVENT_SUBJECT_PREFIX: `ev_${stream.toLowerCase()}`,
    WEBHOOK_DISPATCH_PORT: "0",
    WEBHOOK_DISPATCH_POLL_INTERVAL: "20ms",
    WEBHOOK_DISPATCH_AGENTLINK_URL: agentlink.url,
    ...options.env,
  };
  const service = await startWebhookDispatch({
    env,
    clock: options.clock,
    logger: createLogger("webhook-dispatch", {}, "error"),
  });
  const bus = await connectEventBus({
    url: natsUrl(),
    name: `${label}-publisher`,
    stream,
    subjectPrefix: env.SVC_EVENT_SUBJECT_PREFIX!,
  });
  const db = new pg.Client({ connectionString: database.url, options: "-c search_path=webhook_dispatch" });
  await db.connect();
  const transport = createConnectTransport({ baseUrl: service.url, httpVersion: "2" });
  return {
    service,
    console: createClient(WebhookConsoleService, transport),
    callbacks: createClient(WebhookCallbackService, transport),
    agentlink,
    bus,
    env,
    publish: (event, msgId) => publish(bus, event, msgId),
    sql: async (text, params) => (await db.query(text, params)).rows,
    async stop() {
      await service.stop();
      await agentlink.stop();
      await bus.nc.drain();
      await db.end();
      await database.drop();
    },
  };
}
