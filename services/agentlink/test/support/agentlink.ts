import { type Client, ConnectError } from "@connectrpc/connect";
import { type Clock, createInternalClient, createLogger, type RunningService } from "@svc/platform";
import { AgentConsoleService, AgentService } from "@svc/proto/agentlink/v1/agentlink_pb.js";
import pg from "pg";
import { createTestDatabase, natsUrl, type TestDatabase, uniqueName } from "../../../../test/harness/index.ts";
import { startAgentlink } from "../../src/server.ts";

export interface TestAgentlink {
  service: RunningService;
  client: Client<typeof AgentService>;
  console: Client<typeof AgentConsoleService>;
  database: TestDatabase;
  /** Raw SQL in the service's schema, for what no RPC shows. */
  sql<R extends pg.QueryResultRow>(text: string, params?: unknown[]): Promise<R[]>;
  stop(): Promise<void>;
}

export const keyPepper = Buffer.alloc(32, 3);
export const opaqueIdKey = Buffer.alloc(32, 5);
export const callbackSecretKey = Buffer.alloc(32, 6);

/** The agentlink service in this process on its own database, stream and subjects, with the given clock. */
export async function startTestAgentlink(
  label: string,
  options: { clock: Clock; env?: Record<string, string> },
): Promise<TestAgentlink> {
  const database = await createTestDatabase(label);
  const stream = uniqueName(label).toUpperCase();
  const env: Record<string, string> = {
    SVC_DATABASE_URL: database.url,
    SVC_NATS_URL: natsUrl(),
    SVC_EVENT_STREAM: stream,
    SVC_EVENT_SUBJECT_PREFIX: `ev_${stream.toLowerCase()}`,
    AGENTLINK_PORT: "0",
    AGENTLINK_KEY_PEPPER: keyPepper.toString("base64"),
    AGENTLINK_OPAQUE_ID_KEY: opaqueIdKey.toString("base64"),
    AGENTLINK_CALLBACK_SECRET_KEY: callbackSecretKey.toString("base64"),
    ...options.env,
  };
  const service = await startAgentlink({ env, clock: options.clock, logger: createLogger("agentlink", {}, "error") });
  const db = new pg.Client({ connectionString: database.url, options: "-c search_path=agentlink" });
  await db.connect();
  return {
    service,
    client: createInternalClient(AgentService, service.url),
    console: createInternalClient(AgentConsoleService, service.url),
    database,
    sql: async (text, params) => (await db.query(text, params)).rows,
    async stop() {
      await service.stop();
      await db.end();
      await database.drop();
    },
  };
}

/** The Connect error a call ends with (fails the test when the call succeeds). */
export async function refusal(call: Promise<unknown>): Promise<ConnectError> {
  const error = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(error instanceof ConnectError)) throw new Error(`expected a Connect error, got ${String(error)}`);
  return error;
}
