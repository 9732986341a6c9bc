import { base64url } from "jose";
import type { KeySet } from "./key-set.ts";
import { nodeBuffer } from "./node-builtins.ts";

/** Why a token's signature was not accepted, in the order verify-token checks. */
export type SignatureRefusal = "malformed" | "unsupported_algorithm" | "unknown_key" | "bad_signature";

export type SignedClaims =
  | {
      kind: "verified";
      claims: Record<string, unknown>;
      /** The payload exactly as sent: the signature covers these characters, so they identify the token. */
      payloadSegment: string;
    }
  | { kind: "refused"; reason: SignatureRefusal };

/**
 * The claims of a compact JWS that an ES256 key of the key set signed, chosen by its `kid`. The token is split
 * and decoded once. The algorithm is read from the header and must be ES256 before any key is looked at: `none`
 * and HS256 (the public key used as an HMAC secret) are refused for their algorithm. A header naming critical
 * extensions (`crit`) is refused: this verifier understands none.
 */
export async function verifiedClaims(token: string, keys: KeySet): Promise<SignedClaims> {
  const jws = parseCompact(token);
  if (jws === undefined) return { kind: "refused", reason: "malformed" };
  const { header } = jws;
  if (header.alg !== "ES256") return { kind: "refused", reason: "unsupported_algorithm" };
  if (typeof header.kid !== "string") return { kind: "refused", reason: "unknown_key" };
  const check = await keys.check(header.kid);
  if (check === undefined) return { kind: "refused", reason: "unknown_key" };
  if (header.crit !== undefined || !(await check(jws.signingInput, jws.signature)))
    return { kind: "refused", reason: "bad_signature" };
  rememberHeader(jws.headerSegment, header);
  return { kind: "verified", claims: jws.payload, payloadSegment: jws.payloadSegment };
}

interface ParsedJws {
  headerSegment: string;
  header: Record<string, unknown>;
  payload: Record<string, unknown>;
  payloadSegment: string;
  signingInput: Uint8Array<ArrayBuffer>;
  signature: Uint8Array<ArrayBuffer>;
}

/** An empty signature is still the form: an unsecured (`alg: none`) token ends in a dot, refused for its algorithm. */
const compactForm = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * A segment's bytes, its text (UTF-8, a malformed sequence read as U+FFFD), and the bytes of the signing input (a
 * checked token is ASCII). Node's Buffer takes them from its pool instead of a new allocation each.
 */
const node = nodeBuffer;
const segmentBytes: (segment: string) => Uint8Array<ArrayBuffer> = node
  ? (segment) => node.from(segment, "base64url")
  : (segment) => base64url.decode(segment) as Uint8Array<ArrayBuffer>;
const segmentText: (segment: string) => string = node
  ? (segment) => node.from(segment, "base64url").toString("utf8")
  : (segment) => decoder.decode(base64url.decode(segment));
const asciiBytes: (text: string) => Uint8Array<ArrayBuffer> = node
  ? (text) => node.from(text, "latin1")
  : (text) => encoder.encode(text);

/**
 * The headers of tokens that verified, by their segment: every token one key signs has the same header, so it is
 * decoded once. Only verified tokens add to it, and it is emptied when full, so forged headers cannot grow it.
 */
const verifiedHeaders = new Map<string, Record<string, unknown>>();
const verifiedHeadersKept = 16;

function rememberHeader(segment: string, header: Record<string, unknown>) {
  if (verifiedHeaders.has(segment)) return;
  if (verifiedHeaders.size >= verifiedHeadersKept) verifiedHeaders.clear();
  verifiedHeaders.set(segment, header);
}

/** Splits and decodes a compact JWS; undefined when it does not have that form. */
function parseCompact(token: string): ParsedJws | undefined {
  if (!compactForm.test(token)) return undefined;
  const firstDot = token.indexOf(".");
  const secondDot = token.indexOf(".", firstDot + 1);
  const headerSegment = token.slice(0, firstDot);
  const payloadSegment = token.slice(firstDot + 1, secondDot);
  try {
    const header = verifiedHeaders.get(headerSegment) ?? decodeObject(headerSegment);
    const payload = decodeObject(payloadSegment);
    if (header === undefined || payload === undefined) return undefined;
    return {
      headerSegment,
      header,
      payload,
      payloadSegment,
      signingInput: asciiBytes(token.slice(0, secondDot)),
      signature: segmentBytes(token.slice(secondDot + 1)),
    };
  } catch {
    // Not base64url of that length, or not JSON.
    return undefined;
  }
}

function decodeObject(segment: string): Record<string, unknown> | undefined {
  const value: unknown = JSON.parse(segmentText(segment));
  return typeof value === "object" && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}
