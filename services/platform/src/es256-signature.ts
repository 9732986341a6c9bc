/**
 * ECDSA P-256 signatures in the two encodings we meet: DER (what OpenSSL produces and checks fastest)
 * and the raw r||s form JWS requires (RFC 7518 §3.4). Node can convert for us (`dsaEncoding:
 * "ieee-p1363"`), but in Node 24 that costs about as much as the signature itself, so we convert here.
 */

/** Bytes of r and of s for P-256. */
const partSize = 32;

export class SignatureEncodingError extends Error {}

export function derToJose(der: Uint8Array): Buffer {
  // A P-256 signature is at most 72 bytes, so every DER length here fits the one-byte short form.
  if (der.length < 8 || der[0] !== 0x30 || der[1] !== der.length - 2)
    throw new SignatureEncodingError("not a DER ECDSA signature");
  const raw = Buffer.alloc(partSize * 2);
  const afterR = copyInteger(der, 2, raw, 0);
  const afterS = copyInteger(der, afterR, raw, partSize);
  if (afterS !== der.length) throw new SignatureEncodingError("trailing bytes after the DER signature");
  return raw;
}

/** Copies one DER INTEGER right-aligned into its 32-byte slot; returns the offset after it. */
function copyInteger(der: Uint8Array, offset: number, raw: Buffer, slot: number): number {
  const length = der[offset + 1] ?? 0;
  const end = offset + 2 + length;
  if (der[offset] !== 0x02 || length === 0 || end > der.length)
    throw new SignatureEncodingError("malformed DER INTEGER");
  let start = offset + 2;
  // DER puts a 0x00 before a value whose top bit is set, so it is not read as negative.
  while (end - start > partSize && der[start] === 0) start++;
  if (end - start > partSize) throw new SignatureEncodingError("DER INTEGER longer than 32 bytes");
  raw.set(der.subarray(start, end), slot + partSize - (end - start));
  return end;
}

export function joseToDer(raw: Uint8Array): Buffer {
  if (raw.length !== partSize * 2) throw new SignatureEncodingError("an ES256 signature is 64 bytes");
  const r = integerBody(raw.subarray(0, partSize));
  const s = integerBody(raw.subarray(partSize));
  const der = Buffer.allocUnsafe(6 + r.length + s.length);
  der[0] = 0x30;
  der[1] = 4 + r.length + s.length;
  der[2] = 0x02;
  der[3] = r.length;
  der.set(r, 4);
  der[4 + r.length] = 0x02;
  der[5 + r.length] = s.length;
  der.set(s, 6 + r.length);
  return der;
}

/** The minimal two's-complement bytes of an unsigned big-endian integer. */
function integerBody(part: Uint8Array): Uint8Array {
  let start = 0;
  while (start < part.length - 1 && part[start] === 0) start++;
  const body = part.subarray(start);
  if ((body[0] ?? 0) < 0x80) return body;
  const padded = new Uint8Array(body.length + 1);
  padded.set(body, 1);
  return padded;
}
