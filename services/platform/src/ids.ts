import { createHmac, type KeyObject, randomFillSync, randomUUID, timingSafeEqual } from "node:crypto";

export const uuid = (): string => randomUUID();

/**
 * Random bytes drawn from a buffer the CSPRNG refills 4 KiB at a time, each byte handed out once: one
 * call into the CSPRNG costs more than the handful of bytes an id needs (as Node's randomUUID does).
 */
const entropy = { pool: Buffer.alloc(4096), used: 4096 };

function takeRandom(bytes: number): { pool: Buffer; start: number } {
  if (bytes > entropy.pool.length) throw new RangeError(`at most ${entropy.pool.length} random bytes at once`);
  if (entropy.used + bytes > entropy.pool.length) {
    randomFillSync(entropy.pool);
    entropy.used = 0;
  }
  const start = entropy.used;
  entropy.used += bytes;
  return { pool: entropy.pool, start };
}

export function randomHex(bytes: number): string {
  const { pool, start } = takeRandom(bytes);
  return pool.toString("hex", start, start + bytes);
}

const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/** Random base62 text; rejection sampling keeps every character equally likely. */
export function randomBase62(length: number): string {
  let out = "";
  while (out.length < length) {
    const { pool, start } = takeRandom(length * 2);
    for (let i = start; i < start + length * 2 && out.length < length; i++) {
      const byte = pool.readUInt8(i);
      if (byte < 248) out += alphabet.charAt(byte % 62);
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

/** Whether `value` is a uuid in its textual form (any version), as a uuid column accepts it. */
export const isUuid = (value: string): boolean =>
  /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(value);
