import { type Client, ConnectError } from "@connectrpc/connect";
import { type Clock, createInternalClient, createLogger, type RunningService } from "@svc/platform";
import { AccountConsoleService, AccountService } from "@svc/proto/account/v1/account_pb.js";
import pg from "pg";
import { createTestDatabase, natsUrl, type TestDatabase, uniqueName } from "../../../../test/harness/index.ts";
import { startAccount } from "../../src/server.ts";

export interface TestAccount {
  service: RunningService;
  client: Client<typeof AccountService>;
  console: Client<typeof AccountConsoleService>;
  database: TestDatabase;
  /** The settings the service ran with (database, stream, subject prefix, keys). */
  env: Record<string, string>;
  /** Raw SQL in the service's schema, for what no RPC shows. */
  sql<R extends pg.QueryResultRow>(text: string, params?: unknown[]): Promise<R[]>;
  stop(): Promise<void>;
}

const sandboxKey = Buffer.alloc(32, 7).toString("base64");
export const refPepper = Buffer.alloc(32, 9).toString("base64");

/** The account service in this process on its own database, stream and subjects, with the given clock. */
export async function startTestAccount(
  label: string,
  options: { clock: Clock; env?: Record<string, string> },
): Promise<TestAccount> {
  const database = await createTestDatabase(label);
  const stream = uniqueName(label).toUpperCase();
  const env: Record<string, string> = {
    SVC_DATABASE_URL: database.url,
    SVC_NATS_URL: natsUrl(),
    SVC_EVENT_STREAM: stream,
    SVC_EVENT_SUBJECT_PREFIX: `ev_${stream.toLowerCase()}`,
    ACCOUNT_PORT: "0",
    ACCOUNT_SANDBOX_KEY: sandboxKey,
    ACCOUNT_REF_PEPPER: refPepper,
    ...options.env,
  };
  const service = await startAccount({ env, clock: options.clock, logger: createLogger("account", {}, "error") });
  const db = new pg.Client({ connectionString: database.url, options: "-c search_path=account" });
  await db.connect();
  return {
    service,
    client: createInternalClient(AccountService, service.url),
    console: createInternalClient(AccountConsoleService, service.url),
    database,
    env,
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
