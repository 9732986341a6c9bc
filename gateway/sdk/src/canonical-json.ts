/**
 * RFC 8785 (JSON Canonicalization Scheme) of a JSON value: no whitespace, object members sorted by the UTF-16
 * code units of their names, numbers as ECMAScript writes them and strings with JSON.stringify's escapes (both
 * what RFC 8785 prescribes). Members whose value is `undefined` are left out, as JSON.stringify does.
 */
export function canonicalJson(value: unknown): string {
  switch (typeof value) {
    case "string":
      if (!value.isWellFormed()) throw new TypeError("RFC 8785 has no form for a lone surrogate");
      return JSON.stringify(value);
    case "number":
      if (!Number.isFinite(value)) throw new TypeError("RFC 8785 has no form for a non-finite number");
      return JSON.stringify(value);
    case "boolean":
      return value ? "true" : "false";
    case "object": {
      if (value === null) return "null";
      if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
      const record = value as Record<string, unknown>;
      const members = Object.keys(record)
        .filter((name) => record[name] !== undefined)
        .sort()
        .map((name) => `${canonicalJson(name)}:${canonicalJson(record[name])}`);
      return `{${members.join(",")}}`;
    }
    default:
      throw new TypeError(`not a JSON value: ${typeof value}`);
  }
}

/** base64url SHA-256 of the UTF-8 of a text, with Web Crypto. */
export async function sha256Base64url(text: string): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)));
  let binary = "";
  for (const byte of digest) binary += String.fromCharCode(byte);
  return btoa(binary).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}
