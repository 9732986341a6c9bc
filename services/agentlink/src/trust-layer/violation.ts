/** One finding of the trust layer, as `data.error.violations` carries it (interface spec, `data.error` fields). */
export type Violation = {
  source: "schema" | "content" | "classifier";
  type: string;
  /** JSON Pointer (RFC 6901) into the inquire body. */
  path: string;
  severity: "error" | "warning";
  value: string;
  explanation: string;
  fix: string;
};

const MAX_VALUE_CHARACTERS = 120;

/**
 * Characters a reader cannot see or that change how neighbours render: they are written as `\u{…}` so a
 * developer reading `value` sees exactly what was sent.
 */
// biome-ignore lint/suspicious/noMisleadingCharacterClass: the variation selectors are listed on purpose; they are what this class finds.
const INVISIBLE = /[\p{C}\p{Z}\u115F\u1160\u3164\uFFA0\u2800\u{E0100}-\u{E01EF}\uFE00-\uFE0F]/u;

const escapeCodePoint = (character: string) => `\\u{${(character.codePointAt(0) ?? 0).toString(16).toUpperCase()}}`;

/** The offending value for a report: invisible characters escaped, cut to 120 characters (ending in `…`). */
export function reportValue(raw: unknown): string {
  const tokens: string[] = [];
  let length = 0;
  for (const character of describe(raw)) {
    const token = character !== " " && INVISIBLE.test(character) ? escapeCodePoint(character) : character;
    tokens.push(token);
    length += token === character ? 1 : token.length;
    if (length > MAX_VALUE_CHARACTERS) break;
  }
  if (length <= MAX_VALUE_CHARACTERS) return tokens.join("");
  let out = "";
  let kept = 0;
  for (const token of tokens) {
    const size = token.startsWith("\\u{") ? token.length : 1;
    if (kept + size > MAX_VALUE_CHARACTERS - 1) break;
    out += token;
    kept += size;
  }
  return `${out}…`;
}

/** A short, bounded description of any value: never serializes a large structure. */
function describe(raw: unknown): string {
  if (typeof raw === "string") return raw;
  if (raw === null || typeof raw === "number" || typeof raw === "boolean") return String(raw);
  if (Array.isArray(raw)) return `[array of ${raw.length}]`;
  if (typeof raw === "object") return "{object}";
  return `(${typeof raw})`;
}

/** Appends one RFC 6901 reference token. */
export const pointer = (base: string, token: string | number) =>
  typeof token === "number" || !(token.includes("~") || token.includes("/"))
    ? `${base}/${token}`
    : `${base}/${token.replaceAll("~", "~0").replaceAll("/", "~1")}`;
