import {
  createECDH,
  createPrivateKey,
  createPublicKey,
  type JsonWebKey,
  type KeyObject,
  sign,
  verify,
} from "node:crypto";
import { joseToDer } from "@svc/platform";

/** ES256 (ECDSA P-256, SHA-256, IEEE P1363 signatures) on `node:crypto`, the only algorithm the wallet side takes. */
export const es256 = "ES256";

export interface Es256KeyPair {
  privateKey: KeyObject;
  publicJwk: JsonWebKey;
}

/** The P-256 key pair whose private scalar is `seed` (32 bytes): how a configured secret becomes a key. */
export function keyPairFromSeed(seed: Buffer): Es256KeyPair {
  const ecdh = createECDH("prime256v1");
  ecdh.setPrivateKey(seed);
  const point = ecdh.getPublicKey();
  const publicJwk = {
    kty: "EC",
    crv: "P-256",
    x: point.subarray(1, 33).toString("base64url"),
    y: point.subarray(33, 65).toString("base64url"),
  };
  const privateKey = createPrivateKey({ key: { ...publicJwk, d: seed.toString("base64url") }, format: "jwk" });
  return { privateKey, publicJwk };
}

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");

/** The ES256 signature (base64url, P1363) of a JWS signing input. */
export const signEs256 = (data: string, key: KeyObject): string =>
  sign("sha256", Buffer.from(data), { key, dsaEncoding: "ieee-p1363" }).toString("base64url");

/** A compact JWS over `payload` with `header` (alg set to ES256). */
export function signJws(header: Record<string, unknown>, payload: unknown, key: KeyObject): string {
  const input = `${b64({ ...header, alg: es256 })}.${b64(payload)}`;
  return `${input}.${signEs256(input, key)}`;
}

/**
 * Imported keys by the JWK object they came from. Trusted issuers' JWKs live as long as the trust list,
 * so each is imported once (importing costs about a tenth of a verification); a holder's `cnf` key is
 * parsed anew with every presentation and imported once within it.
 */
const imported = new WeakMap<object, KeyObject | null>();

/** The P-256 public key of a JWK, or null when it is not one. */
function p256PublicKey(jwk: unknown): KeyObject | null {
  if (typeof jwk !== "object" || jwk === null) return null;
  const known = imported.get(jwk);
  if (known !== undefined) return known;
  const { kty, crv } = jwk as JsonWebKey;
  let key: KeyObject | null = null;
  // Checked on the JWK, not on the imported key: reading a key's details costs a third of its import.
  if (kty === "EC" && crv === "P-256")
    try {
      key = createPublicKey({ key: jwk as JsonWebKey, format: "jwk" });
    } catch {
      key = null;
    }
  imported.set(jwk, key);
  return key;
}

/** Whether `signature` (base64url, P1363) is an ES256 signature of `data` by the P-256 public JWK. */
export function verifyEs256(jwk: unknown, data: string, signature: string): boolean {
  const key = p256PublicKey(jwk);
  const raw = Buffer.from(signature, "base64url");
  if (!key || raw.length !== 64) return false;
  try {
    // A DER signature and a bare key object verify about a third faster than asking node to convert.
    return verify("sha256", Buffer.from(data), key, joseToDer(raw));
  } catch {
    return false;
  }
}
