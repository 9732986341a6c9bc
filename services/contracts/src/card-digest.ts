import { hash } from "node:crypto";

/**
 * base64url SHA-256 of the canonical JSON text (UTF-8): the `card_digest` of a Proof of Resolution, as the
 * trust layer computes it (the browser computes the same with `crypto.subtle` over `canonicalJson`'s text).
 */
export const canonicalDigest = (canonical: string | Uint8Array) =>
  hash("sha256", typeof canonical === "string" ? utf8(canonical) : canonical, "base64url");

const UTF8 = new TextEncoder();
/** Reused for every encoding: `encodeInto` an existing buffer costs a third of `encode`'s new one. */
let scratch = new Uint8Array(64 * 1024);

/**
 * The UTF-8 bytes of a text, valid only until the next call: a view of one shared buffer, for a caller that
 * measures or digests them at once.
 */
export function utf8(text: string): Uint8Array {
  // Three bytes per UTF-16 unit at most (a surrogate pair is two units for four bytes).
  if (scratch.length < text.length * 3) scratch = new Uint8Array(text.length * 3);
  return scratch.subarray(0, UTF8.encodeInto(text, scratch).written);
}
