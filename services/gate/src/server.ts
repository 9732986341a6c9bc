import {
  ConfigError,
  createInternalClient,
  defineService,
  measureByStatus,
  migrateService,
  runAsMain,
  type StartOptions,
  startPeriodicJob,
  startService,
  startWakeableLoop,
} from "@svc/platform";
import { AccountService } from "@svc/proto/account/v1/account_pb.js";
import { SigningService } from "@svc/proto/signing/v1/signing_pb.js";
import { settings } from "./config.ts";
import { gateConsoleRoutes } from "./console-routes.ts";
import { migrations } from "./migrations/index.ts";
import { requestStatuses, requestsByStatus } from "./requests/request-metrics.ts";
import { createVerificationRequests } from "./requests/request-writer.ts";
import { pruneGate } from "./requests/retention.ts";
import { gateRoutes } from "./routes.ts";
import { gateServices } from "./services.ts";

/** Requests one sandbox sweep claims, and then answers side by side, at most. */
const sandboxSweepLimit = 20;

/**
 * gate: gates, sessions and grant tokens, verification requests and their ceremonies. Serves
 * GateService (to the gateway) and GateConsoleService (operators), sweeps expired requests, and
 * answers for sandbox humans whose answer was lost.
 */
const gate = defineService({
  name: "gate",
  envPrefix: "GATE",
  defaultPort: 9092,
  settings,
  schema: "gate",
  entities: [],
  migrations,
  storedDefinitions: [createVerificationRequests],
  build: ({ orm, statements, bus, outbox, clock, logger, config }) => {
    if (config.deployment === "production" && config.testCrashAfterCreate)
      throw new ConfigError("GATE_TEST_CRASH_AFTER_CREATE is a test fault point; production refuses it");
    return gateServices({
      orm,
      statements,
      bus,
      outbox,
      clock,
      logger,
      account: createInternalClient(AccountService, config.accountUrl),
      signing: createInternalClient(SigningService, config.signingUrl),
      refKey: config.refKey,
      presenceWindowMs: config.presenceWindow,
      passkeyOrigin: config.passkeyOrigin,
      deployment: config.deployment,
      crashAfterCreate: config.testCrashAfterCreate,
    });
  },
  routes: (services) => {
    const partner = gateRoutes(services);
    const console = gateConsoleRoutes({ gates: services.gates, lifecycle: services.lifecycle });
    return (router) => {
      partner(router);
      console(router);
    };
  },
  background: async ({ lifecycle, sandbox }, { orm, clock, config, logger }) => {
    const retention = {
      sessionMs: config.sessionRetention,
      requestMs: config.requestRetention,
      batchSize: config.retentionBatch,
    };
    const sweeps = startPeriodicJob({
      everyMs: config.sweepEvery,
      logger,
      steps: [
        { name: "expiry sweep", run: () => lifecycle.sweep(200) },
        { name: "retention", run: () => pruneGate(orm, clock, retention) },
      ],
    });
    // At start (the answers a killed predecessor left) and then every GATE_SANDBOX_SWEEP_EVERY; a full
    // batch is followed by the next one at once.
    const sandboxSweep = startWakeableLoop({
      pollMs: config.sandboxSweepEvery,
      work: async () => (await sandbox.sweep(sandboxSweepLimit)) === sandboxSweepLimit,
      onError: (error) => logger.warn("sandbox sweep failed; will retry", { error }),
    });
    const stopMeasuring = measureByStatus(requestsByStatus, requestStatuses, () =>
      orm.em.fork().execute(`select status, count(*) as count from requests group by status`),
    );
    return async () => {
      stopMeasuring();
      await sweeps.stop();
      await sandboxSweep.stop();
    };
  },
});

export const startGate = (options: StartOptions = {}) => startService(gate, options);

runAsMain(
  import.meta.url,
  "gate",
  () => startGate(),
  () => migrateService(gate),
);
