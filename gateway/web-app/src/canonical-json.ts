/**
 * RFC 8785 for the JSON a card holds (strings, numbers, booleans, null, arrays, objects): no whitespace,
 * members sorted by UTF-16 code units, members without a value left out. The card's "what your passkey
 * signs" view shows this text, whose SHA-256 is the card's card_digest.
 */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const record = value as Record<string, unknown>;
    const members = Object.keys(record)
      .filter((key) => record[key] !== undefined)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${canonicalJson(record[key])}`);
    return `{${members.join(",")}}`;
  }
  return JSON.stringify(value);
}
