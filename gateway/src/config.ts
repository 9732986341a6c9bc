import {
  ConfigError,
  commonSettings,
  developmentSecret,
  type Logger,
  loadConfig,
  parse,
  testClockRefusal,
} from "@svc/platform";

const wholeNumber =
  (max: number) =>
  (raw: string): number => {
    const n = Number(raw);
    if (!/^\d+$/.test(raw) || n > max) throw new Error(`not a whole number from 0 to ${max}: ${raw}`);
    return n;
  };

export const settings = {
  ...commonSettings,
  host: { parse: parse.string, default: "127.0.0.1", description: "address the public API listens on" },
  port: { parse: parse.port, default: 8080, description: "port of the public API ({base_url} is /v1 on it)" },
  consoleHost: {
    parse: parse.string,
    default: "127.0.0.1",
    description: "address of the internal console service; never expose it",
  },
  consolePort: {
    parse: parse.port,
    default: 9090,
    description: "port of the internal console service (svcctl talks to it)",
  },
  signingUrl: { parse: parse.url, default: "http://127.0.0.1:9091", description: "base URL of the signing service" },
  gateUrl: { parse: parse.url, default: "http://127.0.0.1:9092", description: "base URL of the gate service" },
  accountUrl: { parse: parse.url, default: "http://127.0.0.1:9093", description: "base URL of the account service" },
  agentlinkUrl: {
    parse: parse.url,
    default: "http://127.0.0.1:9094",
    description: "base URL of the agentlink service",
  },
  agentEnvironments: {
    parse: (raw: string) => {
      const names = raw.split(",").map((name) => name.trim());
      for (const name of names)
        if (name !== "development" && name !== "production")
          throw new Error(`not a comma-separated list of development and production: ${raw}`);
      return names as ("development" | "production")[];
    },
    default: ["development", "production"] as ("development" | "production")[],
    description:
      "environments whose agent keys this gateway accepts (a key of another is refused as other_environment)",
  },
  agentKeyCacheTtl: {
    parse: parse.duration,
    default: 5000,
    description:
      "how long agentlink's answer for an agent key is reused at most (each 80-100% of it): the longest a revoked agent still passes when NATS did not carry the revocation",
  },
  apiKeyCacheTtl: {
    parse: parse.duration,
    default: 5000,
    description:
      "how long a recognised API key is reused without a statement at most (each 80-100% of it): the longest a revoked key still passes on another replica when NATS did not carry the revocation",
  },
  userSessionCacheTtl: {
    parse: parse.duration,
    default: 5000,
    description:
      "how long whom a user session names is reused without verifying its JWT and asking account again, at most (each 80-100% of it, never past the token's exp): the longest a deleted person's session still names them on another replica when NATS did not carry the deletion",
  },
  webhookDispatchUrl: {
    parse: parse.url,
    default: "http://127.0.0.1:9095",
    description: "base URL of the webhook-dispatch service",
  },
  publicOrigin: {
    parse: parse.url,
    default: "http://127.0.0.1:8080",
    description: "the gateway's public origin ({api_origin}), used in links and documents",
  },
  rateLimitAnonymousPerMinute: {
    parse: wholeNumber(1_000_000_000),
    default: 600,
    description:
      "requests per minute and client IP of operations without a credential (verify-token); 0 leaves them uncounted",
  },
  ledgerHandoverUntil: {
    parse: (raw: string): Date | null => {
      const at = Date.parse(raw);
      if (!/^\d{4}-\d{2}-\d{2}T/.test(raw) || Number.isNaN(at))
        throw new Error(`not an ISO 8601 instant (like 2026-12-01T12:00:00Z): ${raw}`);
      return new Date(at);
    },
    default: null,
    description:
      "upgrading from a gateway that recorded token checks in signing: until this instant, a check this gateway's ledger calls first is also recorded in signing's ledger, which decides (set it past the end of the rollout plus the 120 s token life and a 10 minute margin)",
  },
  trustedProxyHops: {
    parse: wholeNumber(10),
    default: 0,
    description:
      "reverse proxies in front of the gateway whose X-Forwarded-For entries name the client (per-IP limits)",
  },
  inFlightLease: {
    parse: (raw: string) => {
      const ms = parse.duration(raw);
      // The lease is taken once per request: it must outlast a request held the longest, a 25 s long-poll.
      if (ms < 30_000) throw new Error(`must be at least 30s, longer than a long-poll's 25 s: ${raw}`);
      return ms;
    },
    default: 60_000,
    description:
      "how long an in_flight slot of a replica that died stays taken; at least 30s, since a held long-poll keeps its slot up to 25 s",
  },
  upgradeUrl: {
    parse: parse.url,
    default: "",
    description: "upgrade_url of a development key's rate-limit refusal (default: {api_origin}/upgrade)",
  },
  devIdpIssuer: {
    parse: parse.url,
    default: "",
    description:
      "development only (production refuses it): issuer of the development identity provider (deploy/dev-idp), whose /mint answers the console's MintDevSession",
  },
  consoleToken: developmentSecret({
    parse: (raw: string) => {
      if (!/^[\x21-\x7e]{32,}$/.test(raw)) throw new Error("must be at least 32 printable ASCII characters, no spaces");
      return raw;
    },
    developmentDefault: "svc-console-development-operator-token",
    description: "operator credential of the console port (svcctl sends it as Authorization: Bearer)",
  }),
  keyPepper: developmentSecret({
    parse: parse.base64Key32,
    developmentDefault: Buffer.from("c3ZjLWdhdGV3YXktZGV2ZWxvcG1lbnQtcGVwcGVyISE=", "base64"),
    description: "HMAC-SHA256 pepper of API-key hashes, 32 bytes base64",
  }),
};

/**
 * `GATEWAY_*` variables plus the shared `SVC_*` ones; production refuses the development pepper, the test clock
 * and the development identity provider.
 */
export function loadGatewayConfig(env: NodeJS.ProcessEnv, logger: Logger) {
  const config = loadConfig("GATEWAY", settings, env, logger);
  const clockRefusal = testClockRefusal(config.deployment, env);
  if (clockRefusal) throw new ConfigError(`invalid configuration:\n  ${clockRefusal}`);
  if (config.deployment === "production" && config.devIdpIssuer !== "")
    throw new ConfigError(
      "invalid configuration:\n  GATEWAY_DEV_IDP_ISSUER (the development identity provider) is refused in production",
    );
  return { ...config, upgradeUrl: config.upgradeUrl || `${config.publicOrigin}/upgrade` };
}
