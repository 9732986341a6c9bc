import {
  ConfigError,
  type ConfigOf,
  commonSettings,
  type Logger,
  loadConfig,
  parse,
  type Settings,
} from "@svc/platform";

/** ACCOUNT_<NAME> variables beside the shared ones; the README lists them with their defaults. */
export const settings = {
  sandboxKey: {
    parse: parse.base64Key32,
    default: null as Buffer | null,
    description:
      "AES-256-GCM key sealing sandbox humans' passkey private keys, base64 of 32 bytes; required in production",
  },
  refPepper: {
    parse: parse.base64Key32,
    default: null as Buffer | null,
    description: "HMAC-SHA256 key of partner user references at rest, base64 of 32 bytes; required in production",
  },
  devIssuer: {
    parse: parse.url,
    default: "http://127.0.0.1:8080/dev-idp",
    description: "issuer of sandbox humans' sign-in identities: the gateway's development identity provider",
  },
  rpName: {
    parse: parse.string,
    default: "svc",
    description: "relying-party name shown by the person's passkey manager at registration",
  },
} satisfies Settings;

export type AccountSettings = typeof settings;

export interface AccountSecrets {
  sandboxKey: Buffer;
  refPepper: Buffer;
}

/**
 * Anyone can read these from the source: they protect nothing, they only let a development mesh start
 * without setup. Production refuses to run on them.
 */
export const developmentSecrets: AccountSecrets = {
  sandboxKey: Buffer.from("account development sandbox key!", "utf8"),
  refPepper: Buffer.from("account development ref pepper!!", "utf8"),
};

/**
 * The two keys, checked before the service opens anything: a production deployment needs its own for
 * both (its partners' development environments have sandbox humans too), development falls back to the
 * built-in ones with a warning.
 */
export function resolveSecrets(env: NodeJS.ProcessEnv, logger: Logger): AccountSecrets {
  const config: ConfigOf<
    Pick<AccountSettings, "sandboxKey" | "refPepper"> & { deployment: typeof commonSettings.deployment }
  > = loadConfig(
    "ACCOUNT",
    { sandboxKey: settings.sandboxKey, refPepper: settings.refPepper, deployment: commonSettings.deployment },
    env,
  );
  const named = { sandboxKey: "ACCOUNT_SANDBOX_KEY", refPepper: "ACCOUNT_REF_PEPPER" } as const;
  const problems: string[] = [];
  const secrets = { ...developmentSecrets };
  for (const key of ["sandboxKey", "refPepper"] as const) {
    const given = config[key];
    if (config.deployment === "production") {
      if (given === null) problems.push(`${named[key]} is required in production (base64 of 32 random bytes)`);
      else if (given.equals(developmentSecrets[key]))
        problems.push(`${named[key]} is the built-in development value, which production refuses`);
    } else if (given === null) {
      logger.warn(`${named[key]} is not set: using the INSECURE built-in development value`);
    }
    if (given !== null) secrets[key] = given;
  }
  if (problems.length > 0) throw new ConfigError(`invalid configuration:\n  ${problems.join("\n  ")}`);
  return secrets;
}
