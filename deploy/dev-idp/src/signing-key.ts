import { createECDH, hkdfSync } from "node:crypto";
import { type CryptoKey, calculateJwkThumbprint, importJWK, type JWK } from "jose";

/** The order of P-256: a private scalar must be below it. */
const p256Order = BigInt("0xffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551");

/**
 * The provider's ES256 key, derived from its seed: the same seed signs with the same key after a restart,
 * so sessions it minted before stay valid without the provider keeping any state.
 */
export async function signingKeyFromSeed(
  seed: string,
): Promise<{ kid: string; privateKey: CryptoKey; publicJwk: JWK }> {
  let d: Buffer;
  let counter = 0;
  do {
    d = Buffer.from(hkdfSync("sha256", seed, Buffer.alloc(0), `svc dev-idp signing key ${counter++}`, 32));
  } while (BigInt(`0x${d.toString("hex")}`) === 0n || BigInt(`0x${d.toString("hex")}`) >= p256Order);
  const ecdh = createECDH("prime256v1");
  ecdh.setPrivateKey(d);
  const point = ecdh.getPublicKey();
  const publicPart = {
    kty: "EC",
    crv: "P-256",
    x: point.subarray(1, 33).toString("base64url"),
    y: point.subarray(33, 65).toString("base64url"),
  };
  const kid = await calculateJwkThumbprint(publicPart);
  const privateKey = (await importJWK({ ...publicPart, d: d.toString("base64url") }, "ES256")) as CryptoKey;
  return { kid, privateKey, publicJwk: { ...publicPart, kid, alg: "ES256", use: "sig" } };
}
