import { createCipheriv, createDecipheriv, type KeyObject, randomBytes } from "node:crypto";
import { keyedHash } from "@svc/platform";

/** A final answer as kept: what the envelope renders again on a replay. */
export type StoredAnswer = { kind: "ok"; data: unknown } | { kind: "error"; error: Record<string, unknown> };

/**
 * Answers can hold secrets (create-session's grant token, a request's flow secret in `web_url`), so
 * they are kept sealed (AES-256-GCM) under a key derived from the pepper, the scope and the key itself,
 * none of which is stored: a copy of the table opens nothing, and one key's answer never opens
 * another's. The row's name is the associated data, so a sealed answer moved to another row fails.
 */
export const answerSealKey = (pepper: KeyObject, scope: string, key: string): Buffer =>
  keyedHash(pepper, `idempotency answer\n${scope}\n${key}`);

export function sealAnswer(sealKey: Buffer, keyHash: Buffer, answer: StoredAnswer): Buffer {
  const nonce = randomBytes(12);
  const cipher = createCipheriv("aes-256-gcm", sealKey, nonce).setAAD(keyHash);
  const body = Buffer.concat([cipher.update(JSON.stringify(answer), "utf8"), cipher.final()]);
  return Buffer.concat([nonce, body, cipher.getAuthTag()]);
}

export function openAnswer(sealKey: Buffer, keyHash: Buffer, sealed: Buffer): StoredAnswer {
  const decipher = createDecipheriv("aes-256-gcm", sealKey, sealed.subarray(0, 12)).setAAD(keyHash);
  decipher.setAuthTag(sealed.subarray(sealed.length - 16));
  const text = Buffer.concat([decipher.update(sealed.subarray(12, sealed.length - 16)), decipher.final()]);
  return JSON.parse(text.toString("utf8")) as StoredAnswer;
}
