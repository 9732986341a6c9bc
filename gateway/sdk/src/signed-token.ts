import { compactVerify, decodeProtectedHeader } from "jose";
import type { KeySet } from "./key-set.ts";

/** Why a token's signature was not accepted, in the order verify-token checks. */
export type SignatureRefusal = "malformed" | "unsupported_algorithm" | "unknown_key" | "bad_signature";

export type SignedClaims =
  | { kind: "verified"; claims: Record<string, unknown> }
  | { kind: "refused"; reason: SignatureRefusal };

/**
 * The claims of a compact JWS that an ES256 key of the key set signed, chosen by its `kid`. The algorithm is
 * read from the header and must be ES256 before any key is looked at: `none` and HS256 (the public key used as
 * an HMAC secret) are refused for their algorithm.
 */
export async function verifiedClaims(token: string, keys: KeySet): Promise<SignedClaims> {
  let header: { alg?: unknown; kid?: unknown };
  try {
    header = decodeProtectedHeader(token);
  } catch {
    return { kind: "refused", reason: "malformed" };
  }
  if (token.split(".").length !== 3) return { kind: "refused", reason: "malformed" };
  if (header.alg !== "ES256") return { kind: "refused", reason: "unsupported_algorithm" };
  if (typeof header.kid !== "string") return { kind: "refused", reason: "unknown_key" };
  const key = await keys.key(header.kid);
  if (key === undefined) return { kind: "refused", reason: "unknown_key" };
  let payload: Uint8Array;
  try {
    ({ payload } = await compactVerify(token, key, { algorithms: ["ES256"] }));
  } catch {
    return { kind: "refused", reason: "bad_signature" };
  }
  try {
    const claims: unknown = JSON.parse(new TextDecoder().decode(payload));
    if (typeof claims === "object" && claims !== null && !Array.isArray(claims))
      return { kind: "verified", claims: claims as Record<string, unknown> };
  } catch {
    // A signed payload that is not JSON is no token of ours.
  }
  return { kind: "refused", reason: "malformed" };
}
