import { createHash, generateKeyPairSync } from "node:crypto";

export interface GeneratedKey {
  kid: string;
  x: string;
  y: string;
  /** PKCS#8 DER; the caller seals it and then wipes this buffer. */
  pkcs8: Buffer;
}

export function generateSigningKey(): GeneratedKey {
  const { publicKey, privateKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
  const jwk = publicKey.export({ format: "jwk" });
  const x = jwk.x as string;
  const y = jwk.y as string;
  return { kid: jwkThumbprint(x, y), x, y, pkcs8: privateKey.export({ format: "der", type: "pkcs8" }) };
}

/** RFC 7638: a kid any verifier can recompute from the published key. */
const jwkThumbprint = (x: string, y: string): string =>
  createHash("sha256")
    .update(JSON.stringify({ crv: "P-256", kty: "EC", x, y }))
    .digest("base64url");
