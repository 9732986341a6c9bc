import { createSecretKey } from "node:crypto";
import {
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
import { Agent, AgentKey } from "./agents/agent.entity.ts";
import { AgentNames } from "./agents/agent-naming.ts";
import { Binding, BindSession } from "./binding/binding.entity.ts";
import { settings } from "./config.ts";
import { SandboxAnswers } from "./confirmations/sandbox-answers.ts";
import { migrations } from "./migrations/index.ts";
import { Card, CardApprover, CardAudit } from "./proposals/card.entity.ts";
import { cardStatuses, cardsByStatus } from "./proposals/card-metrics.ts";
import { CardReader } from "./proposals/card-reader.ts";
import { CardWriter, proposeCards } from "./proposals/card-writer.ts";
import { expireSweep } from "./proposals/expire-sweep.ts";
import { pruneCards } from "./proposals/retention.ts";
import { agentlinkRoutes, type RouteDependencies } from "./routes.ts";
import { classifierFromEnvironment } from "./trust-layer/classifier-client.ts";

/** Cards one sandbox sweep claims, and then answers side by side, at most. */
const sandboxSweepLimit = 20;

/**
 * agentlink: agents with their keys, the bindings between agents and people, the agents' proposals and
 * the people's confirmations of them (AgentService), and the operators' agent registry (AgentConsoleService).
 */
const agentlink = defineService({
  name: "agentlink",
  envPrefix: "AGENTLINK",
  defaultPort: 9094,
  settings,
  schema: "agentlink",
  entities: [Agent, AgentKey, BindSession, Binding, Card, CardAudit, CardApprover],
  migrations,
  storedDefinitions: [proposeCards],
  build: ({ orm, statements, clock, config, env, bus, outbox, logger }): RouteDependencies => {
    const account = createInternalClient(AccountService, config.accountUrl);
    const signing = createInternalClient(SigningService, config.signingUrl);
    const opaqueIdKey = createSecretKey(config.opaqueIdKey);
    const sandbox = new SandboxAnswers({
      context: () => ({
        em: orm.em.fork(),
        clock,
        opaqueIdKey,
        account,
        signing,
        deployment: config.deployment,
        bus,
        outbox,
      }),
      account,
      passkeyOrigin: config.passkeyOrigin,
      logger,
      deployment: config.deployment,
    });
    return {
      orm,
      agentNames: new AgentNames(statements),
      cards: new CardWriter(statements),
      cardReader: new CardReader(statements, opaqueIdKey),
      clock,
      secrets: {
        keyPepper: config.keyPepper,
        opaqueIdKey: config.opaqueIdKey,
        callbackSecretKey: config.callbackSecretKey,
      },
      keyOverlapMs: config.keyOverlap,
      deployment: config.deployment,
      account,
      signing,
      sandbox,
      logger,
      classifier: classifierFromEnvironment(env),
      bus,
      outbox,
    };
  },
  routes: agentlinkRoutes,
  // The expire sweep and the retention every AGENTLINK_SWEEP_EVERY; replicas share the work through
  // their row locks.
  background: async (deps, { clock, config, logger }) => {
    const sweeps = startPeriodicJob({
      everyMs: config.sweepEvery,
      logger,
      steps: [
        { name: "expire sweep", run: () => expireSweep({ ...deps, em: deps.orm.em.fork() }, undefined) },
        {
          name: "card retention",
          run: () => pruneCards(deps.orm, clock, config.cardRetention, config.retentionBatch),
        },
      ],
    });
    // At start (the answers a killed predecessor left) and then every AGENTLINK_SANDBOX_SWEEP_EVERY; a
    // full batch is followed by the next one at once.
    const sandboxSweep = startWakeableLoop({
      pollMs: config.sandboxSweepEvery,
      work: async () => (await deps.sandbox.sweep(sandboxSweepLimit)) === sandboxSweepLimit,
      onError: (error) => logger.warn("sandbox sweep failed; will retry", { error }),
    });
    const stopMeasuring = measureByStatus(cardsByStatus, cardStatuses, () =>
      deps.orm.em.fork().execute(`select status, count(*) as count from card group by status`),
    );
    return async () => {
      stopMeasuring();
      await sweeps.stop();
      await sandboxSweep.stop();
    };
  },
});

export const startAgentlink = (options: StartOptions = {}) => startService(agentlink, options);

runAsMain(
  import.meta.url,
  "agentlink",
  () => startAgentlink(),
  () => migrateService(agentlink),
);
