import { isDeepStrictEqual } from "node:util";
import { createLogger, type Logger } from "./logger.ts";

/**
 * Layered configuration: built-in defaults, then environment variables with the service's prefix
 * (for example SIGNING_PORT), then the shared SVC_ variables. Everything is parsed and validated at
 * start, so a bad value stops the process with a message naming the variable.
 */
export interface Setting<T> {
  default?: T;
  parse: (raw: string) => T;
  description: string;
  /** Also read from SVC_<NAME>, for values every service shares (database URL, NATS URL). */
  shared?: boolean;
  /** The default is a development secret: see `developmentSecret`. */
  secret?: true;
}

export type Settings = Record<string, Setting<unknown>>;
export type ConfigOf<S extends Settings> = { [K in keyof S]: S[K] extends Setting<infer T> ? T : never };

export class ConfigError extends Error {}

const envName = (key: string) => key.replace(/[A-Z]/g, (c) => `_${c}`).toUpperCase();

/**
 * A secret that production must be given: its built-in default, readable by anyone in the source,
 * only lets a development mesh start without setup. Under the config's own `deployment` setting,
 * production refuses it missing or equal to the default; development falls back to the default with
 * one warning naming the variable.
 */
export function developmentSecret<T>(setting: {
  parse: (raw: string) => T;
  developmentDefault: T;
  description: string;
}): Setting<T> {
  return { parse: setting.parse, default: setting.developmentDefault, description: setting.description, secret: true };
}

export function loadConfig<S extends Settings>(
  prefix: string,
  settings: S,
  env: NodeJS.ProcessEnv = process.env,
  logger: Pick<Logger, "warn"> = createLogger(prefix.toLowerCase().replaceAll("_", "-")),
): ConfigOf<S> {
  const out: Record<string, unknown> = {};
  const problems: string[] = [];
  const fallbacks: string[] = [];
  for (const [key, setting] of Object.entries(settings)) {
    const own = `${prefix}_${envName(key)}`;
    const shared = `SVC_${envName(key)}`;
    const raw = env[own] ?? (setting.shared ? env[shared] : undefined);
    if (raw === undefined || raw === "") {
      if (setting.default === undefined)
        problems.push(`${own}${setting.shared ? ` (or ${shared})` : ""} is required: ${setting.description}`);
      else out[key] = setting.default;
      if (setting.secret) fallbacks.push(own);
      continue;
    }
    try {
      out[key] = setting.parse(raw);
    } catch (error) {
      problems.push(`${own}: ${(error as Error).message}`);
    }
  }
  problems.push(...secretProblems(prefix, settings, out, fallbacks, logger));
  if (problems.length > 0) throw new ConfigError(`invalid configuration:\n  ${problems.join("\n  ")}`);
  return out as ConfigOf<S>;
}

/** What production refuses of the development secrets; in development, the warnings for the missing ones. */
function secretProblems(
  prefix: string,
  settings: Settings,
  loaded: Record<string, unknown>,
  missing: string[],
  logger: Pick<Logger, "warn">,
): string[] {
  const secrets = Object.entries(settings).filter(([, setting]) => setting.secret);
  if (secrets.length === 0) return [];
  if (!("deployment" in settings))
    throw new Error(`${prefix} configuration has development secrets but no deployment setting to judge them by`);
  if (loaded.deployment !== "production") {
    for (const variable of missing)
      logger.warn(`${variable} is not set: using the INSECURE built-in development value`, { variable });
    return [];
  }
  return secrets.flatMap(([key, setting]) => {
    const variable = `${prefix}_${envName(key)}`;
    if (missing.includes(variable)) return [`${variable} is required in production: ${setting.description}`];
    if (key in loaded && isDeepStrictEqual(loaded[key], setting.default))
      return [`${variable} is the built-in development value, which production refuses`];
    return [];
  });
}

export const parse = {
  string: (raw: string) => raw,
  port: (raw: string) => {
    const n = Number(raw);
    if (!Number.isInteger(n) || n < 0 || n > 65535) throw new Error(`not a TCP port: ${raw}`);
    return n;
  },
  positiveInt: (raw: string) => {
    const n = Number(raw);
    if (!Number.isInteger(n) || n <= 0) throw new Error(`not a positive integer: ${raw}`);
    return n;
  },
  url: (raw: string) => {
    new URL(raw);
    return raw.replace(/\/$/, "");
  },
  boolean: (raw: string) => {
    if (!["true", "false", "1", "0"].includes(raw)) throw new Error(`not a boolean: ${raw}`);
    return raw === "true" || raw === "1";
  },
  oneOf:
    <T extends string>(...values: T[]) =>
    (raw: string): T => {
      if (!values.includes(raw as T)) throw new Error(`must be one of ${values.join(", ")}: ${raw}`);
      return raw as T;
    },
  /** Durations as `90s`, `5m`, `2h`, `30d` or plain milliseconds; `0` means off where a setting allows it. */
  duration: (raw: string) => {
    const match = /^(\d+)(ms|s|m|h|d)?$/.exec(raw.trim());
    if (!match) throw new Error(`not a duration (like 30s, 5m, 2h, 30d): ${raw}`);
    const unit = { ms: 1, s: 1e3, m: 60e3, h: 3600e3, d: 86400e3 }[(match[2] ?? "ms") as "ms"];
    return Number(match[1]) * unit;
  },
  base64Key32: (raw: string) => {
    const key = Buffer.from(raw, "base64");
    if (key.length !== 32) throw new Error("must be 32 bytes, base64-encoded");
    return key;
  },
};

/** Settings every service has. */
export const commonSettings = {
  databaseUrl: {
    parse: parse.url,
    shared: true,
    default: "postgres://postgres@127.0.0.1:5432/svc",
    description: "PostgreSQL connection URL",
  },
  natsUrl: {
    parse: parse.string,
    shared: true,
    default: "nats://127.0.0.1:4222",
    description: "NATS server URL(s), comma-separated",
  },
  eventStream: {
    parse: parse.string,
    shared: true,
    default: "EVENTS",
    description: "JetStream stream that carries domain events",
  },
  eventSubjectPrefix: {
    parse: parse.string,
    shared: true,
    default: "events",
    description: "subject prefix of domain events",
  },
  deployment: {
    parse: parse.oneOf("development", "production"),
    shared: true,
    default: "development" as "development" | "production",
    description: "development allows embedded defaults and the test clock; production refuses them",
  },
  migrations: {
    parse: parse.oneOf("at-start", "job"),
    shared: true,
    default: "at-start" as MigrationMode,
    description:
      "at-start: a starting process applies its schema's pending migrations (under a lock); job: a migrate Job (--migrate-only) applies them before the rollout, and a process refuses to start while any is pending",
  },
} satisfies Settings;

/** Who applies a schema's migrations: each starting process, or a migrate Job run once per release. */
export type MigrationMode = "at-start" | "job";
