import { type EnvironmentName, randomBase62 } from "@svc/platform";

export type KeyType = "secret" | "site";

/** Length of the random part of every API key: 32 base62 characters, about 190 bits. */
const secretLength = 32;

interface KeyForm {
  prefix: string;
  type: KeyType;
  environment: EnvironmentName;
}

/** The forms we issue; each type and environment has exactly one. */
const issuedForms: readonly KeyForm[] = [
  { prefix: "svc_dev_", type: "secret", environment: "development" },
  { prefix: "svc_production_", type: "secret", environment: "production" },
  { prefix: "pk_test_", type: "site", environment: "development" },
  { prefix: "pk_live_", type: "site", environment: "production" },
];

/** The spec also writes production secret keys `svc_prod_`: read as the same key as `svc_production_`. */
const acceptedForms: readonly KeyForm[] = [
  ...issuedForms,
  { prefix: "svc_prod_", type: "secret", environment: "production" },
];

const base62 = /^[A-Za-z0-9]+$/;

export interface ParsedKey {
  type: KeyType;
  environment: EnvironmentName;
  /** The random part, without the prefix. */
  secret: string;
}

function issuedPrefix(type: KeyType, environment: EnvironmentName): string {
  const form = issuedForms.find((f) => f.type === type && f.environment === environment);
  if (!form) throw new Error(`no ${type} key is issued for ${environment}`);
  return form.prefix;
}

/** The kind of API key a bearer value claims to be, by its prefix alone; undefined when it is no API key. */
export function apiKeyTypeOf(credential: string): KeyType | undefined {
  return acceptedForms.find((f) => credential.startsWith(f.prefix))?.type;
}

/** Splits a key into type, environment and secret; undefined unless it is exactly an accepted form. */
export function parseKey(credential: string): ParsedKey | undefined {
  const form = acceptedForms.find((f) => credential.startsWith(f.prefix));
  if (!form) return undefined;
  const secret = credential.slice(form.prefix.length);
  if (secret.length !== secretLength || !base62.test(secret)) return undefined;
  return { type: form.type, environment: form.environment, secret };
}

export function generateKey(type: KeyType, environment: EnvironmentName): { key: string; parsed: ParsedKey } {
  const secret = randomBase62(secretLength);
  return { key: `${issuedPrefix(type, environment)}${secret}`, parsed: { type, environment, secret } };
}

/**
 * What is hashed: type, environment and the random part, never the prefix text, so both spellings of
 * a production key hash alike and a secret cannot be replayed as another type or environment.
 */
export const hashInput = (key: ParsedKey): string => `${key.type}:${key.environment}:${key.secret}`;

/** Shown in lists so an operator can tell keys apart: the issued prefix and the first four random characters. */
export const displayPrefix = (key: ParsedKey): string =>
  `${issuedPrefix(key.type, key.environment)}${key.secret.slice(0, 4)}`;
