import { createCipheriv, createECDH, hkdfSync, randomBytes } from "node:crypto";

/** RFC 8291 §4: push services take records of 4096 octets; a payload of ours fills less than one. */
const recordSize = 4096;
const saltBytes = 16;

const info = (label: string, ...keys: Buffer[]) => Buffer.concat([Buffer.from(`${label}\0`), ...keys]);

/**
 * A Web Push message body (RFC 8291 with RFC 8188 `aes128gcm`): `payload` encrypted to the browser's key
 * `p256dh` (an uncompressed P-256 point) and its 16-byte `auth` secret, under an ECDH key pair made for this
 * message alone, as one record (header: salt, record size, our public key). Each of the three derivations is
 * one HKDF (RFC 5869) call of node:crypto, where `web-push` spends eight HMAC objects per message.
 */
export function encryptPush(payload: Buffer, p256dh: Buffer, auth: Buffer): Buffer {
  const ecdh = createECDH("prime256v1");
  const senderPublic = ecdh.generateKeys();
  const sharedSecret = ecdh.computeSecret(p256dh);
  // §3.3: IKM from the shared secret, keyed by the auth secret and bound to both public keys.
  const ikm = Buffer.from(hkdfSync("sha256", sharedSecret, auth, info("WebPush: info", p256dh, senderPublic), 32));
  const salt = randomBytes(saltBytes);
  const cek = Buffer.from(hkdfSync("sha256", ikm, salt, info("Content-Encoding: aes128gcm"), 16));
  const nonce = Buffer.from(hkdfSync("sha256", ikm, salt, info("Content-Encoding: nonce"), 12));
  const cipher = createCipheriv("aes-128-gcm", cek, nonce);
  // RFC 8188 §2: the last record's plaintext ends with the delimiter 0x02; no padding follows.
  const sealed = Buffer.concat([
    cipher.update(payload),
    cipher.update(Buffer.of(2)),
    cipher.final(),
    cipher.getAuthTag(),
  ]);
  const header = Buffer.alloc(saltBytes + 5);
  salt.copy(header);
  header.writeUInt32BE(recordSize, saltBytes);
  header[saltBytes + 4] = senderPublic.length;
  return Buffer.concat([header, senderPublic, sealed]);
}
