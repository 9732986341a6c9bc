import { attestationLifetimeSeconds } from "@svc/contracts/attestation";
import {
  batchSizeSetting,
  ConfigError,
  type ConfigOf,
  commonSettings,
  developmentSecret,
  type Logger,
  loadConfig,
  parse,
  testClockRefusal,
} from "@svc/platform";
import { developmentKek, kekId } from "./key-encryption.ts";
import type { RotationPolicy } from "./rotation-schedule.ts";

const day = 86_400_000;
const keySetCacheLifetimeMs = 300_000;

const settings = {
  databaseUrl: commonSettings.databaseUrl,
  deployment: commonSettings.deployment,
  migrations: commonSettings.migrations,
  host: { parse: parse.string, default: "127.0.0.1", description: "address the Connect server listens on" },
  port: { parse: parse.port, default: 9091, description: "port of the Connect server and its probes" },
  issuer: {
    parse: parse.url,
    default: "http://127.0.0.1:8080",
    description: "`iss` of every token: the gateway origin {api_origin}",
  },
  kek: developmentSecret({
    parse: parse.base64Key32,
    developmentDefault: developmentKek,
    description: "key-encryption key for private keys at rest, 32 bytes base64",
  }),
  publishLead: {
    parse: parse.duration,
    default: 300_000,
    description: "how long a new key is published before it signs (at least the key-set cache lifetime)",
  },
  proofRetention: {
    parse: parse.duration,
    default: 400 * day,
    description: "how long a retired key stays published so Proofs of Resolution it signed still verify",
  },
  rotateEvery: {
    parse: parse.duration,
    default: 30 * day,
    description: "age of the newest key at which a new one is added; 0 turns the schedule off",
  },
  ledgerPruneBatch: batchSizeSetting("rows one prune statement of the replay ledger deletes at most"),
  refreshEvery: {
    parse: parse.duration,
    default: 30_000,
    description: "how often the key ring reloads, the schedule is checked and the replay ledger is pruned",
  },
};

export type SigningConfig = ConfigOf<typeof settings> & {
  kekId: string;
  rotation: RotationPolicy;
};

export function loadSigningConfig(env: NodeJS.ProcessEnv, logger: Pick<Logger, "warn">): SigningConfig {
  const config = loadConfig("SIGNING", settings, env, logger);
  const production = config.deployment === "production";
  const problems: string[] = [];
  const clockRefusal = testClockRefusal(config.deployment, env);
  if (clockRefusal) problems.push(clockRefusal);
  if (config.refreshEvery <= 0) problems.push("SIGNING_REFRESH_EVERY must be longer than 0");
  // Another replica learns of a new key at its next refresh; it must know the key before the key signs.
  if (config.publishLead < config.refreshEvery)
    problems.push("SIGNING_PUBLISH_LEAD must be at least SIGNING_REFRESH_EVERY");
  // Verifiers cache the key set for 300 s: a key that signed sooner could meet a cache without it.
  if (config.publishLead < keySetCacheLifetimeMs)
    problems.push("SIGNING_PUBLISH_LEAD must be at least the key set's cache lifetime, 5m");
  // Every token's iss must be {api_origin}; the development default is a loopback address.
  if (production && !env.SIGNING_ISSUER?.startsWith("https://"))
    problems.push("SIGNING_ISSUER must be set to the public https origin ({api_origin}) in production");
  if (problems.length > 0) throw new ConfigError(`invalid configuration:\n  ${problems.join("\n  ")}`);
  return {
    ...config,
    kekId: kekId(config.kek),
    rotation: {
      publishLeadMs: config.publishLead,
      // Attestation tokens need their key for 120 s, proofs for the retention; the longer need wins.
      retainMs: Math.max(attestationLifetimeSeconds * 1000, config.proofRetention),
    },
  };
}
