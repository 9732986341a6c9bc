import { createInternalClient, runAsMain, type StartOptions, startService } from "@svc/platform";
import { AccountService } from "@svc/proto/account/v1/account_pb.js";
import { Agent, AgentKey } from "./agents/agent.entity.ts";
import { Binding, BindSession } from "./binding/binding.entity.ts";
import { settings } from "./config.ts";
import { migrations } from "./migrations/index.ts";
import { agentlinkRoutes, type RouteDependencies } from "./routes.ts";

/**
 * agentlink: agents with their keys, and the bindings between agents and people (AgentService), and
 * the operators' agent registry (AgentConsoleService).
 */
export const startAgentlink = (options: StartOptions = {}) =>
  startService(
    {
      name: "agentlink",
      envPrefix: "AGENTLINK",
      defaultPort: 9094,
      settings,
      schema: "agentlink",
      entities: [Agent, AgentKey, BindSession, Binding],
      migrations,
      build: ({ orm, clock, config }): RouteDependencies => ({
        orm,
        clock,
        secrets: {
          keyPepper: config.keyPepper,
          opaqueIdKey: config.opaqueIdKey,
          callbackSecretKey: config.callbackSecretKey,
        },
        keyOverlapMs: config.keyOverlap,
        deployment: config.deployment,
        account: createInternalClient(AccountService, config.accountUrl),
      }),
      routes: agentlinkRoutes,
    },
    options,
  );

runAsMain(import.meta.url, () => startAgentlink());
