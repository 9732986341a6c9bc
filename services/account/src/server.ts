import { createLogger, runAsMain, type StartOptions, startService } from "@svc/platform";
import { AgeEvidence } from "./age/age-evidence.entity.ts";
import { resolveSecrets, settings } from "./config.ts";
import { Device } from "./devices/device.entity.ts";
import { Human, SignInIdentity } from "./humans/human.entity.ts";
import { AccountLink } from "./links/account-link.entity.ts";
import { migrations } from "./migrations/index.ts";
import { startCeremonySweep } from "./passkeys/ceremony-sweep.ts";
import { Passkey, PasskeyCeremony } from "./passkeys/passkey.entity.ts";
import { accountRoutes } from "./routes.ts";
import { SandboxPasskey } from "./sandbox/sandbox-passkey.entity.ts";

/**
 * account: humans, their passkeys (WebAuthn), devices, age evidence and secured-account links
 * (AccountService), and the operators' sandbox humans (AccountConsoleService).
 */
export const startAccount = async (options: StartOptions = {}) => {
  const logger = options.logger ?? createLogger("account");
  // Checked before anything opens: production must not run on the built-in keys.
  const secrets = resolveSecrets(options.env ?? process.env, logger);
  return startService(
    {
      name: "account",
      envPrefix: "ACCOUNT",
      defaultPort: 9093,
      settings,
      schema: "account",
      entities: [Human, SignInIdentity, Passkey, PasskeyCeremony, SandboxPasskey, Device, AgeEvidence, AccountLink],
      migrations,
      routes: ({ orm, clock, bus, outbox, config }) =>
        accountRoutes({ orm, clock, bus, outbox, secrets, devIssuer: config.devIssuer, rpName: config.rpName }),
      background: async ({ orm, clock }) => startCeremonySweep({ orm, clock, logger }),
    },
    { ...options, logger },
  );
};

runAsMain(import.meta.url, () => startAccount());
