import { createPrivateKey, createPublicKey, type KeyObject } from "node:crypto";
import type { LogFields, Logger } from "@svc/platform";
import { createSigner, type JwsSigner } from "../src/compact-jws.ts";
import { generateSigningKey } from "../src/key-generation.ts";

export interface LogEntry {
  level: "debug" | "info" | "warn" | "error";
  msg: string;
  fields: LogFields;
}

/** Keeps log lines for assertions instead of printing them. */
export function memoryLogger(): Logger & { entries: LogEntry[] } {
  const entries: LogEntry[] = [];
  const make = (base: LogFields): Logger => ({
    debug: (msg, fields) => void entries.push({ level: "debug", msg, fields: { ...base, ...fields } }),
    info: (msg, fields) => void entries.push({ level: "info", msg, fields: { ...base, ...fields } }),
    warn: (msg, fields) => void entries.push({ level: "warn", msg, fields: { ...base, ...fields } }),
    error: (msg, fields) => void entries.push({ level: "error", msg, fields: { ...base, ...fields } }),
    child: (fields) => make({ ...base, ...fields }),
  });
  return Object.assign(make({}), { entries });
}

export interface TestKey {
  kid: string;
  signer: JwsSigner;
  privateKey: KeyObject;
  publicKey: KeyObject;
}

/** A ring key made the way the service makes them, held only in memory. */
export function testKey(): TestKey {
  const generated = generateSigningKey();
  const privateKey = createPrivateKey({ key: generated.pkcs8, format: "der", type: "pkcs8" });
  return {
    kid: generated.kid,
    signer: createSigner(generated.kid, privateKey),
    privateKey,
    publicKey: createPublicKey(privateKey),
  };
}

const decodeSegment = (segment: string): Record<string, unknown> =>
  JSON.parse(Buffer.from(segment, "base64url").toString("utf8"));

export const payloadOf = (token: string): Record<string, unknown> => decodeSegment(token.split(".")[1] ?? "");
