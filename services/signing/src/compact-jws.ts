import { type KeyObject, sign } from "node:crypto";
import { derToJose } from "@svc/platform";

/** A key that signs, with its protected header encoded once instead of on every token. */
export interface JwsSigner {
  kid: string;
  privateKey: KeyObject;
  headerSegment: string;
}

export function createSigner(kid: string, privateKey: KeyObject): JwsSigner {
  return { kid, privateKey, headerSegment: encodeSegment({ alg: "ES256", kid, typ: "JWT" }) };
}

/** A JSON object (the header, the attestation contract's claims or a proof's) as a base64url segment. */
const encodeSegment = (value: Readonly<Record<string, unknown>>): string =>
  Buffer.from(JSON.stringify(value)).toString("base64url");

/** Compact-serialized ES256 JWS over the claims. */
export function signCompact(signer: JwsSigner, claims: Readonly<Record<string, unknown>>): string {
  const signingInput = `${signer.headerSegment}.${encodeSegment(claims)}`;
  const der = sign("sha256", Buffer.from(signingInput, "latin1"), signer.privateKey);
  return `${signingInput}.${derToJose(der).toString("base64url")}`;
}
