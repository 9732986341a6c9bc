import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";

/**
 * A sandbox passkey's private key at rest: AES-256-GCM under ACCOUNT_SANDBOX_KEY, with the credential
 * id as additional data, so a sealed key copied onto another credential's row does not open.
 * Layout: 12-byte nonce, ciphertext, 16-byte tag.
 */
const nonceBytes = 12;
const tagBytes = 16;

export class SealedKeyError extends Error {}

export function sealPrivateKey(key: Buffer, credentialId: string, pkcs8: Buffer): Buffer {
  const nonce = randomBytes(nonceBytes);
  const cipher = createCipheriv("aes-256-gcm", key, nonce);
  cipher.setAAD(Buffer.from(credentialId));
  const ciphertext = Buffer.concat([cipher.update(pkcs8), cipher.final()]);
  return Buffer.concat([nonce, ciphertext, cipher.getAuthTag()]);
}

export function openPrivateKey(key: Buffer, credentialId: string, sealed: Buffer): Buffer {
  try {
    const decipher = createDecipheriv("aes-256-gcm", key, sealed.subarray(0, nonceBytes));
    decipher.setAAD(Buffer.from(credentialId));
    decipher.setAuthTag(sealed.subarray(sealed.length - tagBytes));
    return Buffer.concat([decipher.update(sealed.subarray(nonceBytes, sealed.length - tagBytes)), decipher.final()]);
  } catch {
    throw new SealedKeyError(
      `the sandbox passkey ${credentialId} does not open under ACCOUNT_SANDBOX_KEY: the key changed or the row was altered`,
    );
  }
}
