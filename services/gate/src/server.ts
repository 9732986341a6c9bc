import { createInternalClient, createLogger, runAsMain, type StartOptions, startService } from "@svc/platform";
import { AccountService } from "@svc/proto/account/v1/account_pb.js";
import { SigningService } from "@svc/proto/signing/v1/signing_pb.js";
import { resolveRefKey, settings } from "./config.ts";
import { gateConsoleRoutes } from "./console-routes.ts";
import { migrations } from "./migrations/index.ts";
import { createVerificationRequests } from "./requests/request-writer.ts";
import { gateRoutes } from "./routes.ts";
import { type GateServices, gateServices } from "./services.ts";

/**
 * gate: gates, sessions and grant tokens, verification requests and their ceremonies. Serves
 * GateService (to the gateway) and GateConsoleService (operators), and sweeps expired requests.
 */
export const startGate = (options: StartOptions = {}) => {
  const logger = options.logger ?? createLogger("gate");
  // Checked before anything opens: production must not hash references with the built-in key.
  const refKey = resolveRefKey(options.env ?? process.env, logger);
  let services: GateServices | undefined;
  const servicesOf = (context: Parameters<Parameters<typeof startService<typeof settings>>[0]["routes"]>[0]) =>
    (services ??= gateServices({
      orm: context.orm,
      statements: context.statements,
      bus: context.bus,
      outbox: context.outbox,
      clock: context.clock,
      logger,
      account: createInternalClient(AccountService, context.config.accountUrl),
      signing: createInternalClient(SigningService, context.config.signingUrl),
      refKey,
      presenceWindowMs: context.config.presenceWindow,
      passkeyOrigin: context.config.passkeyOrigin,
      deployment: context.config.deployment,
    }));

  return startService(
    {
      name: "gate",
      envPrefix: "GATE",
      defaultPort: 9092,
      settings,
      schema: "gate",
      entities: [],
      migrations,
      storedDefinitions: [createVerificationRequests],
      routes: (context) => {
        const built = servicesOf(context);
        const partner = gateRoutes(built);
        const console = gateConsoleRoutes({ gates: built.gates, lifecycle: built.lifecycle });
        return (router) => {
          partner(router);
          console(router);
        };
      },
      background: async (context) => {
        const { lifecycle } = servicesOf(context);
        const timer = setInterval(() => {
          lifecycle.sweep(200).catch((error: unknown) => logger.warn("expiry sweep failed; will retry", { error }));
        }, context.config.sweepEvery);
        return async () => clearInterval(timer);
      },
    },
    { ...options, logger },
  );
};

runAsMain(import.meta.url, () => startGate());
