import {
  type Clock,
  clockFromEnvironment,
  createLogger,
  databaseReachable,
  type Logger,
  migrateSchema,
  openDatabase,
  openStatementPool,
  type PeriodicJob,
  type RunningService,
  runAsMain,
  serveConnect,
  startPeriodicJob,
  startTelemetry,
} from "@svc/platform";
import { loadSigningConfig } from "./config.ts";
import { KeyRing } from "./key-ring.ts";
import { addKeyWhen, deleteUnpublishedKeys } from "./key-rotation.ts";
import { migrations } from "./migrations/index.ts";
import { databaseReplayLedger, ledgerRetentionMarginMs } from "./replay-ledger.ts";
import { type KeyWindow, rotationDue } from "./rotation-schedule.ts";
import { signingRoutes } from "./routes.ts";
import { SigningKey } from "./signing-key.entity.ts";
import { TokenCheck } from "./token-check.entity.ts";

export interface RunningSigning extends RunningService {
  /** Runs the periodic upkeep (key-ring reload, rotation schedule, pruning) now, for tests and tools. */
  maintain(): Promise<void>;
}

const signingSchema = { schema: "signing", entities: [SigningKey, TokenCheck], migrations };

/**
 * Signing starts without `startService`: it emits no events, so it has no outbox and must not need
 * NATS to sign, and its readiness includes a key that signs now.
 */
export async function startSigning(
  options: { env?: NodeJS.ProcessEnv; clock?: Clock; logger?: Logger } = {},
): Promise<RunningSigning> {
  const env = options.env ?? process.env;
  // First: the Postgres instrumentation and the RPC interceptors are set up only once tracing is on.
  const telemetry = await startTelemetry("signing", env);
  const logger = options.logger ?? createLogger("signing");
  const config = loadSigningConfig(env, logger);
  const clock = options.clock ?? clockFromEnvironment(env);

  const orm = await openDatabase({
    ...signingSchema,
    url: config.databaseUrl,
    logger,
    migrationMode: config.migrations,
  });
  let maintenance: PeriodicJob | undefined;
  let statements: ReturnType<typeof openStatementPool> | undefined;
  try {
    const addKey = (due: (newest: KeyWindow | undefined, now: Date) => boolean) =>
      addKeyWhen(orm, { clock, kek: config.kek, policy: config.rotation, due });
    const first = await addKey((newest) => newest === undefined);
    if (first) logger.info("first signing key created", { kid: first.kid });
    const ring = new KeyRing({ orm, kek: config.kek, clock, logger });
    await ring.load();
    statements = openStatementPool({ url: config.databaseUrl, schema: "signing", max: 4, logger });
    const ledger = databaseReplayLedger(orm, statements, config.ledgerPruneBatch);

    // Periodic upkeep; each step reads the injected clock for its own decisions.
    maintenance = startPeriodicJob({
      everyMs: config.refreshEvery,
      logger,
      steps: [
        {
          name: "rotation schedule",
          run: async () => {
            const added = await addKey((newest, now) => rotationDue(newest, now, config.rotateEvery));
            if (added)
              logger.info("signing key added by the rotation schedule", {
                kid: added.kid,
                signsFrom: added.window.signsFrom,
              });
          },
        },
        { name: "key ring reload", run: async () => void (await ring.refresh()) },
        {
          name: "replay ledger prune",
          run: async () => void (await ledger.prune(new Date(clock.now().getTime() - ledgerRetentionMarginMs))),
        },
        { name: "unpublished key removal", run: async () => void (await deleteUnpublishedKeys(orm, clock.now())) },
      ],
    });

    const service = await serveConnect({
      name: "signing",
      host: config.host,
      port: config.port,
      logger,
      routes: signingRoutes({
        clock,
        issuer: config.issuer,
        ring,
        ledger,
        rotate: async () => {
          const added = await addKey(() => true);
          if (added === undefined) throw new Error("a requested rotation added no key");
          logger.info("signing key added on request", { kid: added.kid, signsFrom: added.window.signsFrom });
          return added;
        },
      }),
      ready: async () => {
        await databaseReachable(orm);
        ring.signer(clock.now());
      },
      onStop: async () => {
        await maintenance?.stop();
        await statements?.end();
        await orm.close();
        await telemetry.stop();
      },
    });
    return { ...service, maintain: maintenance.runOnce };
  } catch (error) {
    await maintenance?.stop();
    await statements?.end();
    await orm.close(true);
    await telemetry.stop();
    throw error;
  }
}

runAsMain(
  import.meta.url,
  "signing",
  () => startSigning(),
  () => migrateSchema({ ...signingSchema, envPrefix: "SIGNING", logger: createLogger("signing") }),
);
