import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { openPrivateKey, SealedKeyError, sealPrivateKey } from "../src/sandbox/key-sealing.ts";

describe("sandbox key sealing", () => {
  const key = randomBytes(32);
  const secret = randomBytes(138);

  it("opens what it sealed, and the sealed bytes do not contain the key", () => {
    const sealed = sealPrivateKey(key, "cred-1", secret);
    expect(sealed.includes(secret.subarray(0, 16))).toBe(false);
    expect(openPrivateKey(key, "cred-1", sealed).equals(secret)).toBe(true);
  });

  it("does not open under another key, for another credential, or altered", () => {
    const sealed = sealPrivateKey(key, "cred-1", secret);
    expect(() => openPrivateKey(randomBytes(32), "cred-1", sealed)).toThrow(SealedKeyError);
    expect(() => openPrivateKey(key, "cred-2", sealed)).toThrow(SealedKeyError);
    const altered = Buffer.from(sealed);
    altered[20]! ^= 1;
    expect(() => openPrivateKey(key, "cred-1", altered)).toThrow(SealedKeyError);
  });
});
