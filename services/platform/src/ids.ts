import { createHmac, randomBytes, randomUUID, timingSafeEqual, type KeyObject } from "node:crypto";

export const uuid = (): string => randomUUID();

export const randomHex = (bytes: number): string => randomBytes(bytes).toString("hex");

const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/** Random base62 text; rejection sampling keeps every character equally likely. */
export function randomBase62(length: number): string {
  let out = "";
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte < 248 && out.length < length) out += alphabet[byte % 62];
    }
  }
  return out;
}

/**
 * Keyed hash for secrets we must recognise but never read back (API keys, partner references). The key
 * is a `KeyObject` made once (`createSecretKey`): from raw bytes, Node 24 would import it on every call,
 * which costs several times the hash itself.
 */
export const keyedHash = (key: KeyObject, value: string): Buffer => createHmac("sha256", key).update(value).digest();

export function constantTimeEqual(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}
