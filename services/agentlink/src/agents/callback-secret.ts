import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";

/** whsec_ plus base64 of 32 random bytes, like webhook-dispatch's endpoint secrets. */
export const generateCallbackSecret = (): string => `whsec_${randomBytes(32).toString("base64")}`;

const ivBytes = 12;
const tagBytes = 16;

/**
 * AES-256-GCM under AGENTLINK_CALLBACK_SECRET_KEY: callbacks must be signed with the secret, so a hash
 * would not do. The agent id is the additional data, so a sealed secret copied onto another agent's
 * row does not open. Layout: iv (12 bytes) | tag (16 bytes) | ciphertext, as webhook-dispatch stores
 * endpoint secrets, so the delivery engine can open both alike.
 */
export function sealCallbackSecret(key: Buffer, agentId: string, secret: string): Buffer {
  const iv = randomBytes(ivBytes);
  const cipher = createCipheriv("aes-256-gcm", key, iv);
  cipher.setAAD(Buffer.from(agentId));
  const ciphertext = Buffer.concat([cipher.update(secret, "utf8"), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), ciphertext]);
}

/** The secret of a sealed one (the callback signer's side); throws when the key or the row changed. */
export function openCallbackSecret(key: Buffer, agentId: string, sealed: Buffer): string {
  const decipher = createDecipheriv("aes-256-gcm", key, sealed.subarray(0, ivBytes));
  decipher.setAAD(Buffer.from(agentId));
  decipher.setAuthTag(sealed.subarray(ivBytes, ivBytes + tagBytes));
  return Buffer.concat([decipher.update(sealed.subarray(ivBytes + tagBytes)), decipher.final()]).toString("utf8");
}
