import {
  ConfigError,
  consumePushTriggers,
  defineService,
  deleteDue,
  migrateService,
  runAsMain,
  type StartOptions,
  startPeriodicJob,
  startService,
} from "@svc/platform";
import { AgeEvidence } from "./age/age-evidence.entity.ts";
import { presentationRetentionRule } from "./age/wallet/presentations.ts";
import { walletDependencies } from "./age/wallet/wallet-setup.ts";
import { settings } from "./config.ts";
import { Device } from "./devices/device.entity.ts";
import { Human, SignInIdentity } from "./humans/human.entity.ts";
import { AccountLink } from "./links/account-link.entity.ts";
import { migrations } from "./migrations/index.ts";
import { ceremonyRetentionRule } from "./passkeys/ceremonies.ts";
import { Passkey, PasskeyCeremony } from "./passkeys/passkey.entity.ts";
import { configuredProviders } from "./push/configured-providers.ts";
import { pushItem } from "./push/push-item.ts";
import { measureOldestDuePush } from "./push/push-metrics.ts";
import { pushSealing } from "./push/subscription-sealing.ts";
import { loadVapidKeys } from "./push/vapid-keys.ts";
import { startWebPushSender } from "./push/web-push-sender.ts";
import { accountRoutes, type RouteDependencies } from "./routes.ts";
import { SandboxPasskey } from "./sandbox/sandbox-passkey.entity.ts";

/**
 * account: humans, their passkeys (WebAuthn), devices, age evidence and secured-account links
 * (AccountService), and the operators' sandbox humans (AccountConsoleService).
 */
const account = defineService({
  name: "account",
  envPrefix: "ACCOUNT",
  defaultPort: 9093,
  settings,
  schema: "account",
  entities: [Human, SignInIdentity, Passkey, PasskeyCeremony, SandboxPasskey, Device, AgeEvidence, AccountLink],
  migrations,
  build: async ({ orm, statements, clock, bus, outbox, config, logger }): Promise<RouteDependencies> => {
    if (config.deployment === "production" && config.devWalletIssuerKey !== null)
      throw new ConfigError(
        'ACCOUNT_DEV_WALLET_ISSUER_KEY must be "off" in production: the development issuer signs anything',
      );
    const sealing = pushSealing(config.pushKey);
    return {
      orm,
      statements,
      clock,
      bus,
      outbox,
      secrets: { sandboxKey: config.sandboxKey, refPepper: config.refPepper, emailPepper: config.emailPepper },
      devIssuer: config.devIssuer,
      rpName: config.rpName,
      pushProviders: configuredProviders(config),
      webPush: {
        sealing,
        vapid: await loadVapidKeys(orm, sealing, clock, config),
        policy: { deployment: config.deployment, hosts: config.pushServiceHosts },
        sender: { dueAt: (now) => now, send: () => {}, wake: () => {} },
      },
      logger,
      wallet: walletDependencies({ ...config, clock }),
    };
  },
  routes: accountRoutes,
  // In every replica; batches skip the rows another replica's batch holds.
  background: async ({ orm, clock, webPush, pushProviders }, { statements, bus, config, logger }) => {
    const sender = startWebPushSender({
      statements,
      clock,
      sealing: webPush.sealing,
      vapid: webPush.vapid,
      policy: webPush.policy,
      logger,
      pollMs: config.pushPollEvery,
    });
    webPush.sender = sender;
    // gate's and agentlink's triggers, committed with their items: each replica takes its share.
    const stopTriggers = consumePushTriggers({
      bus,
      consumerName: "account-push",
      take: (trigger, traceContext) =>
        pushItem(
          { em: orm.em.fork(), statements, now: clock.now(), providers: pushProviders, sender, logger, traceContext },
          trigger,
        ).then(() => undefined),
      logger,
    });
    const retention = startPeriodicJob({
      everyMs: config.retentionEvery,
      logger,
      steps: [
        {
          name: "passkey ceremony retention",
          run: () =>
            deleteDue(orm, ceremonyRetentionRule(clock.now(), config.ceremonyRetention), config.retentionBatch),
        },
        {
          name: "age presentation retention",
          run: () =>
            deleteDue(orm, presentationRetentionRule(clock.now(), config.presentationRetention), config.retentionBatch),
        },
      ],
    });
    const stopMeasuring = measureOldestDuePush(statements, clock);
    return async () => {
      stopMeasuring();
      await stopTriggers();
      await sender.stop();
      await retention.stop();
    };
  },
});

export const startAccount = (options: StartOptions = {}) => startService(account, options);

runAsMain(
  import.meta.url,
  "account",
  () => startAccount(),
  () => migrateService(account),
);
