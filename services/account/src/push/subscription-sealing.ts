import { createCipheriv, createDecipheriv, createHmac, createSecretKey, hkdfSync, randomBytes } from "node:crypto";

/**
 * Web push secrets at rest, under keys derived from ACCOUNT_PUSH_KEY: a subscription's endpoint and
 * keys (the endpoint is a capability: whoever holds it can push to the browser), sealed AES-256-GCM with
 * the row's id as additional data so a sealed value copied onto another row does not open; the
 * endpoint's HMAC-SHA256, which finds a subscription registered again without opening every row.
 * Layout of a sealed value: 12-byte nonce, ciphertext, 16-byte tag.
 */
export interface PushSealing {
  seal(id: string, plaintext: Buffer): Buffer;
  open(id: string, sealed: Buffer): Buffer;
  endpointHash(endpoint: string): Buffer;
}

const nonceBytes = 12;
const tagBytes = 16;

export function pushSealing(pushKey: Buffer): PushSealing {
  // Key objects, made once: node:crypto checks a Buffer key on every cipher it makes, which costs more than the cipher.
  const derive = (info: string) => createSecretKey(Buffer.from(hkdfSync("sha256", pushKey, Buffer.alloc(0), info, 32)));
  const sealKey = derive("svc web push seal");
  const hashKey = derive("svc web push endpoint hash");
  return {
    seal(id, plaintext) {
      const nonce = randomBytes(nonceBytes);
      const cipher = createCipheriv("aes-256-gcm", sealKey, nonce);
      cipher.setAAD(Buffer.from(id));
      const ciphertext = Buffer.concat([cipher.update(plaintext), cipher.final()]);
      return Buffer.concat([nonce, ciphertext, cipher.getAuthTag()]);
    },
    open(id, sealed) {
      try {
        const decipher = createDecipheriv("aes-256-gcm", sealKey, sealed.subarray(0, nonceBytes));
        decipher.setAAD(Buffer.from(id));
        decipher.setAuthTag(sealed.subarray(sealed.length - tagBytes));
        return Buffer.concat([
          decipher.update(sealed.subarray(nonceBytes, sealed.length - tagBytes)),
          decipher.final(),
        ]);
      } catch {
        throw new Error(`the sealed web push value of ${id} does not open under ACCOUNT_PUSH_KEY`);
      }
    },
    endpointHash: (endpoint) => createHmac("sha256", hashKey).update(endpoint).digest(),
  };
}
