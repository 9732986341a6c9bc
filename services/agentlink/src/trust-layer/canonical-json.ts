import { createHash } from "node:crypto";

/**
 * RFC 8785 (JSON Canonicalization Scheme) for JSON values: no whitespace, object keys sorted by UTF-16 code
 * units (what `Array.prototype.sort` does with strings), numbers as ECMAScript's Number-to-String (which
 * JSON.stringify uses), strings with the minimal escapes of JSON.stringify. Only values the trust layer
 * has screened reach it; anything that is not JSON (a non-finite number, undefined, a function) throws.
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value === "boolean") return String(value);
  if (typeof value === "number") {
    if (!Number.isFinite(value)) throw new TypeError("RFC 8785 has no form for a non-finite number");
    return JSON.stringify(value);
  }
  if (typeof value === "string") {
    if (/\p{Cs}/u.test(value)) throw new TypeError("RFC 8785 has no form for a lone surrogate");
    return JSON.stringify(value);
  }
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (typeof value === "object") {
    const record = value as Record<string, unknown>;
    const members = Object.keys(record)
      .sort()
      .filter((key) => record[key] !== undefined)
      .map((key) => `${JSON.stringify(key)}:${canonicalJson(record[key])}`);
    return `{${members.join(",")}}`;
  }
  throw new TypeError(`not a JSON value: ${typeof value}`);
}

/** base64url SHA-256 of the canonical JSON text: the `card_digest` of a Proof of Resolution. */
export const canonicalDigest = (canonical: string) => createHash("sha256").update(canonical, "utf8").digest("base64url");
