import { createCipheriv, createDecipheriv, createHash, randomBytes } from "node:crypto";

/**
 * Private keys are stored sealed with AES-256-GCM under the key-encryption key (KEK) from
 * configuration. The key id is the additional authenticated data, so a sealed key copied onto another
 * row does not open. Layout: 12-byte nonce, ciphertext, 16-byte tag.
 */
const nonceBytes = 12;
const tagBytes = 16;

/**
 * Used only in development when no SIGNING_KEK is given, and refused in production. Anyone can derive
 * it from this source text: it protects nothing, it only keeps the development path identical.
 */
export const developmentKek: Buffer = createHash("sha256")
  .update("svc signing: INSECURE development-only key-encryption key")
  .digest();

/** Names a KEK without revealing it, so a key sealed under another KEK is reported as such. */
export const kekId = (kek: Buffer): string =>
  createHash("sha256").update("svc signing kek id\0").update(kek).digest().subarray(0, 8).toString("hex");

export class KeyDecryptionError extends Error {}

export function sealPrivateKey(kek: Buffer, kid: string, pkcs8: Buffer): Buffer {
  const nonce = randomBytes(nonceBytes);
  const cipher = createCipheriv("aes-256-gcm", kek, nonce);
  cipher.setAAD(Buffer.from(kid));
  const ciphertext = Buffer.concat([cipher.update(pkcs8), cipher.final()]);
  return Buffer.concat([nonce, ciphertext, cipher.getAuthTag()]);
}

export function openPrivateKey(kek: Buffer, kid: string, sealed: { bytes: Uint8Array; kekId: string }): Buffer {
  const configured = kekId(kek);
  if (sealed.kekId !== configured) {
    throw new KeyDecryptionError(
      `signing key ${kid} is sealed under KEK ${sealed.kekId}, but the configured SIGNING_KEK is ${configured}`,
    );
  }
  try {
    const nonce = sealed.bytes.subarray(0, nonceBytes);
    const tag = sealed.bytes.subarray(sealed.bytes.length - tagBytes);
    const decipher = createDecipheriv("aes-256-gcm", kek, nonce);
    decipher.setAAD(Buffer.from(kid));
    decipher.setAuthTag(tag);
    return Buffer.concat([
      decipher.update(sealed.bytes.subarray(nonceBytes, sealed.bytes.length - tagBytes)),
      decipher.final(),
    ]);
  } catch {
    throw new KeyDecryptionError(
      `signing key ${kid} does not open under KEK ${configured}: the stored key was altered or sealed for another key id`,
    );
  }
}
