import { ConfigError, runAsMain, type StartOptions, startService } from "@svc/platform";
import { AgeEvidence } from "./age/age-evidence.entity.ts";
import { deleteOldPresentations } from "./age/wallet/presentations.ts";
import { walletDependencies } from "./age/wallet/wallet-setup.ts";
import { settings } from "./config.ts";
import { Device } from "./devices/device.entity.ts";
import { Human, SignInIdentity } from "./humans/human.entity.ts";
import { AccountLink } from "./links/account-link.entity.ts";
import { migrations } from "./migrations/index.ts";
import { deleteOldCeremonies } from "./passkeys/ceremonies.ts";
import { Passkey, PasskeyCeremony } from "./passkeys/passkey.entity.ts";
import { configuredProviders } from "./push/configured-providers.ts";
import { accountRoutes, type RouteDependencies } from "./routes.ts";
import { SandboxPasskey } from "./sandbox/sandbox-passkey.entity.ts";
import { startSweeps } from "./sweeps.ts";

/**
 * account: humans, their passkeys (WebAuthn), devices, age evidence and secured-account links
 * (AccountService), and the operators' sandbox humans (AccountConsoleService).
 */
export const startAccount = (options: StartOptions = {}) =>
  startService(
    {
      name: "account",
      envPrefix: "ACCOUNT",
      defaultPort: 9093,
      settings,
      schema: "account",
      entities: [Human, SignInIdentity, Passkey, PasskeyCeremony, SandboxPasskey, Device, AgeEvidence, AccountLink],
      migrations,
      build: ({ orm, clock, bus, outbox, config, logger }): RouteDependencies => {
        if (config.deployment === "production" && config.devWalletIssuerKey !== null)
          throw new ConfigError(
            'ACCOUNT_DEV_WALLET_ISSUER_KEY must be "off" in production: the development issuer signs anything',
          );
        return {
          orm,
          clock,
          bus,
          outbox,
          secrets: { sandboxKey: config.sandboxKey, refPepper: config.refPepper, emailPepper: config.emailPepper },
          devIssuer: config.devIssuer,
          rpName: config.rpName,
          pushProviders: configuredProviders(config),
          logger,
          wallet: walletDependencies({ ...config, clock }),
        };
      },
      routes: accountRoutes,
      background: async ({ orm, clock }, { logger }) =>
        startSweeps(
          [
            { name: "old passkey ceremonies", run: deleteOldCeremonies },
            { name: "old age presentations", run: deleteOldPresentations },
          ],
          { orm, clock, logger },
        ),
    },
    options,
  );

runAsMain(import.meta.url, "account", () => startAccount());
