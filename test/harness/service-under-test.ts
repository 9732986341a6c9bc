import { ConnectError } from "@connectrpc/connect";
import type { RunningService } from "@svc/platform";
import pg from "pg";
import { createTestDatabase, natsUrl, type TestDatabase, uniqueName } from "./index.ts";

export interface ServiceUnderTest {
  service: RunningService;
  database: TestDatabase;
  /** The settings the service ran with: the shared ones of its own database, stream and subjects, then its own. */
  env: Record<string, string>;
  /** Raw SQL in the service's schema, for what no RPC shows. */
  sql<R extends pg.QueryResultRow>(text: string, params?: unknown[]): Promise<R[]>;
  stop(): Promise<void>;
}

/** One service in this process on its own database, stream and subjects; `start` is its start function. */
export async function startServiceUnderTest(
  label: string,
  options: {
    schema: string;
    env: Record<string, string>;
    start: (env: Record<string, string>) => Promise<RunningService>;
  },
): Promise<ServiceUnderTest> {
  const database = await createTestDatabase(label);
  const stream = uniqueName(label).toUpperCase();
  const env: Record<string, string> = {
    SVC_DATABASE_URL: database.url,
    SVC_NATS_URL: natsUrl(),
    SVC_EVENT_STREAM: stream,
    SVC_EVENT_SUBJECT_PREFIX: `ev_${stream.toLowerCase()}`,
    ...options.env,
  };
  const service = await options.start(env);
  const db = new pg.Client({ connectionString: database.url, options: `-c search_path=${options.schema}` });
  await db.connect();
  return {
    service,
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
