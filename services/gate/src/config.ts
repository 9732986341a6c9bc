import { ConfigError, type Logger, parse } from "@svc/platform";

/** GATE_* settings beside the shared SVC_* ones (see the README). */
export const settings = {
  accountUrl: { parse: parse.url, default: "http://127.0.0.1:9093", description: "base URL of the account service" },
  signingUrl: { parse: parse.url, default: "http://127.0.0.1:9091", description: "base URL of the signing service" },
  refKey: {
    parse: (raw: string): Buffer | null => parse.base64Key32(raw),
    default: null,
    description: "32 bytes base64: keys the hashes and seals of partner user references; required in production",
  },
  presenceWindow: {
    parse: parse.duration,
    default: 10 * 60_000,
    description: "how long after a ceremony a returning human passes by Recent Presence",
  },
  sweepEvery: {
    parse: parse.duration,
    default: 30_000,
    description: "how often pending requests past their window are expired",
  },
  passkeyOrigin: {
    parse: parse.url,
    default: "http://127.0.0.1:8080",
    description:
      "origin (and relying party) of passkey assertions answered by sandbox humans: the gateway's public origin",
  },
};

/** Development only: references hashed with it are worthless anywhere else. */
const developmentRefKey = Buffer.from("c3ZjLWdhdGUtZGV2ZWxvcG1lbnQtcmVmLWtleSEhISE=", "base64");

/** The reference key in force; production refuses to run without its own. */
export function resolveRefKey(env: NodeJS.ProcessEnv, logger: Logger): Buffer {
  const raw = env.GATE_REF_KEY;
  const production = (env.SVC_DEPLOYMENT ?? "development") === "production";
  if (!raw) {
    if (production) throw new ConfigError("invalid configuration:\n  GATE_REF_KEY is required in production");
    logger.warn("GATE_REF_KEY is not set: using the built-in development key");
    return developmentRefKey;
  }
  const key = parse.base64Key32(raw);
  if (production && key.equals(developmentRefKey))
    throw new ConfigError(
      "invalid configuration:\n  GATE_REF_KEY is the built-in development key, which production refuses",
    );
  return key;
}
