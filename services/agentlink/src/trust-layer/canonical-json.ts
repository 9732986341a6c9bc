import { createHash } from "node:crypto";

/**
 * RFC 8785 (JSON Canonicalization Scheme): no whitespace, object keys sorted by UTF-16 code units (what
 * `Array.prototype.sort` does with strings), numbers as ECMAScript's Number-to-String (which JSON.stringify
 * uses), strings with the minimal escapes of JSON.stringify. Object members whose value is `undefined` are
 * left out, as JSON.stringify does; any other value JSON cannot hold (a non-finite number, a lone surrogate,
 * a function) throws. Only values the trust layer has screened reach it.
 */
export function canonicalJson(value: unknown): string {
  const sorted = sortedCopy(value);
  return sorted === UNSORTABLE ? write(value, "") : JSON.stringify(sorted);
}

const UNSORTABLE = Symbol("unsortable");
const ARRAY_INDEX = /^(?:0|[1-9]\d{0,9})$/;

/**
 * The value with every object's keys inserted in sorted order, so that the native JSON.stringify writes the
 * canonical form (several times faster than writing it by hand). JavaScript objects list array-index keys
 * ("1", "10") first whatever their insertion order, so an object with one is written by hand instead.
 */
function sortedCopy(value: unknown): unknown {
  switch (typeof value) {
    case "string":
      if (!value.isWellFormed()) throw new TypeError("RFC 8785 has no form for a lone surrogate");
      return value;
    case "number":
      if (!Number.isFinite(value)) throw new TypeError("RFC 8785 has no form for a non-finite number");
      return value;
    case "boolean":
      return value;
    case "object": {
      if (value === null) return value;
      if (Array.isArray(value)) {
        const items: unknown[] = new Array(value.length);
        for (let index = 0; index < value.length; index++) {
          const item = sortedCopy(value[index]);
          if (item === UNSORTABLE) return UNSORTABLE;
          items[index] = item;
        }
        return items;
      }
      const record = value as Record<string, unknown>;
      // No prototype: a "__proto__" key stays an ordinary member.
      const copy: Record<string, unknown> = Object.create(null);
      for (const key of Object.keys(record).sort()) {
        if (record[key] === undefined) continue;
        if (ARRAY_INDEX.test(key) || !key.isWellFormed()) return UNSORTABLE;
        const member = sortedCopy(record[key]);
        if (member === UNSORTABLE) return UNSORTABLE;
        copy[key] = member;
      }
      return copy;
    }
    default:
      throw new TypeError(`not a JSON value: ${typeof value}`);
  }
}

/** The canonical form written by hand: for objects with array-index keys. */
function write(value: unknown, out: string): string {
  switch (typeof value) {
    case "string":
      if (!value.isWellFormed()) throw new TypeError("RFC 8785 has no form for a lone surrogate");
      return out + JSON.stringify(value);
    case "number":
      if (!Number.isFinite(value)) throw new TypeError("RFC 8785 has no form for a non-finite number");
      return out + JSON.stringify(value);
    case "boolean":
      return out + (value ? "true" : "false");
    case "object": {
      if (value === null) return `${out}null`;
      if (Array.isArray(value)) {
        out += "[";
        for (let index = 0; index < value.length; index++) out = write(value[index], index === 0 ? out : `${out},`);
        return `${out}]`;
      }
      const record = value as Record<string, unknown>;
      const keys = Object.keys(record).sort();
      out += "{";
      let first = true;
      for (const key of keys) {
        const member = record[key];
        if (member === undefined) continue;
        if (!key.isWellFormed()) throw new TypeError("RFC 8785 has no form for a lone surrogate");
        out = write(member, `${out}${first ? "" : ","}${JSON.stringify(key)}:`);
        first = false;
      }
      return `${out}}`;
    }
    default:
      throw new TypeError(`not a JSON value: ${typeof value}`);
  }
}

/** base64url SHA-256 of the canonical JSON text (UTF-8): the `card_digest` of a Proof of Resolution. */
export const canonicalDigest = (canonical: string | Uint8Array) =>
  createHash("sha256")
    .update(typeof canonical === "string" ? new TextEncoder().encode(canonical) : canonical)
    .digest("base64url");
