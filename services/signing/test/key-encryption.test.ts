import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { developmentKek, KeyDecryptionError, kekId, openPrivateKey, sealPrivateKey } from "../src/key-encryption.ts";
import { generateSigningKey } from "../src/key-generation.ts";

const kek = randomBytes(32);

describe("private keys sealed under the KEK", () => {
  it("open again under the same KEK and kid, and the sealed bytes do not contain the key", () => {
    const key = generateSigningKey();
    const plaintext = Buffer.from(key.pkcs8);
    const sealed = sealPrivateKey(kek, key.kid, key.pkcs8);
    expect(sealed.includes(plaintext.subarray(plaintext.length - 32))).toBe(false);
    expect(openPrivateKey(kek, key.kid, { bytes: sealed, kekId: kekId(kek) }).equals(plaintext)).toBe(true);
  });

  it("report a different KEK by both ids", () => {
    const key = generateSigningKey();
    const sealed = sealPrivateKey(kek, key.kid, key.pkcs8);
    const other = randomBytes(32);
    const attempt = () => openPrivateKey(other, key.kid, { bytes: sealed, kekId: kekId(kek) });
    expect(attempt).toThrow(KeyDecryptionError);
    expect(attempt).toThrow(`sealed under KEK ${kekId(kek)}, but the configured SIGNING_KEK is ${kekId(other)}`);
  });

  it("do not open for another kid or after a flipped bit", () => {
    const key = generateSigningKey();
    const sealed = sealPrivateKey(kek, key.kid, key.pkcs8);
    expect(() => openPrivateKey(kek, "another-kid", { bytes: sealed, kekId: kekId(kek) })).toThrow(KeyDecryptionError);
    const flipped = Buffer.from(sealed);
    flipped[20]! ^= 1;
    expect(() => openPrivateKey(kek, key.kid, { bytes: flipped, kekId: kekId(kek) })).toThrow(KeyDecryptionError);
    expect(() => openPrivateKey(kek, key.kid, { bytes: Buffer.alloc(5), kekId: kekId(kek) })).toThrow(
      KeyDecryptionError,
    );
  });

  it("name KEKs by a short digest that differs between KEKs and does not contain them", () => {
    expect(kekId(kek)).toMatch(/^[0-9a-f]{16}$/);
    expect(kekId(kek)).not.toBe(kekId(developmentKek));
    expect(kek.toString("hex")).not.toContain(kekId(kek));
  });
});
