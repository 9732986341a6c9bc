import { createCipheriv, createDecipheriv, createSecretKey, hkdfSync, randomBytes } from "node:crypto";
import { keyedHash } from "@svc/platform";

/**
 * The partner's user references (`partner_user_id`, `partner_user_ref`) are never stored readably.
 * Lookups (the 409 rule, Recent Presence, revoke) use a keyed hash scoped to the organization. The
 * secured-account step needs the reference itself when the person confirms, so a pending request also
 * keeps it sealed (AES-256-GCM, the request id as associated data); the sealed copy is erased when the
 * request ends. Both keys derive from GATE_REF_KEY.
 */
export interface PartnerRefs {
  hash(organizationId: string, value: string): Buffer;
  seal(requestId: string, value: string): Buffer;
  open(requestId: string, sealed: Buffer): string;
}

export function partnerRefs(secret: Buffer): PartnerRefs {
  // Key objects, not Buffers: Node 24 checks a Buffer key by a throw and catch, about 10 µs a call.
  const derive = (info: string) => createSecretKey(Buffer.from(hkdfSync("sha256", secret, Buffer.alloc(0), info, 32)));
  const hashKey = derive("gate partner-ref hash");
  const sealKey = derive("gate partner-ref seal");
  return {
    hash: (organizationId, value) => keyedHash(hashKey, `${organizationId}\n${value}`),
    seal(requestId, value) {
      const nonce = randomBytes(12);
      const cipher = createCipheriv("aes-256-gcm", sealKey, nonce).setAAD(Buffer.from(requestId));
      const body = Buffer.concat([cipher.update(value, "utf8"), cipher.final()]);
      return Buffer.concat([nonce, body, cipher.getAuthTag()]);
    },
    open(requestId, sealed) {
      const decipher = createDecipheriv("aes-256-gcm", sealKey, sealed.subarray(0, 12)).setAAD(Buffer.from(requestId));
      decipher.setAuthTag(sealed.subarray(sealed.length - 16));
      return Buffer.concat([decipher.update(sealed.subarray(12, sealed.length - 16)), decipher.final()]).toString(
        "utf8",
      );
    },
  };
}
