import { createHash } from "node:crypto";
import { canonicalJson } from "@svc/contracts/canonical-json";
import { canonicalDigest, utf8 } from "@svc/contracts/card-digest";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { findAccounts } from "../src/trust-layer/accounts.ts";
import type { VisibleText } from "../src/trust-layer/card-structure.ts";
import { Findings } from "../src/trust-layer/findings.ts";
import { findImpersonations, impersonationPhrases, phraseSource } from "../src/trust-layer/impersonation-phrases.ts";
import { mayHoldDomain, mayHoldOtherUrl, OTHER_URL, TOP_LEVEL_DOMAIN } from "../src/trust-layer/links.ts";
import { matchesOf } from "../src/trust-layer/matches.ts";
import { checkCharacters } from "../src/trust-layer/text-rules.ts";

/**
 * The trust layer takes shortcuts for speed (issue 13's benchmark). Each is held here against the
 * straightforward way it replaces, on arbitrary input.
 */

/** RFC 8785 the plain way: keys sorted by `sort()`, every string and number written by JSON.stringify. */
function referenceCanonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(referenceCanonical).join(",")}]`;
  if (typeof value === "object" && value !== null) {
    const record = value as Record<string, unknown>;
    const members = Object.keys(record)
      .sort()
      .filter((key) => record[key] !== undefined)
      .map((key) => `${JSON.stringify(key)}:${referenceCanonical(record[key])}`);
    return `{${members.join(",")}}`;
  }
  return JSON.stringify(value);
}

/** Texts that reach the shortcuts' edges: digits and separators, capitals, colons, dots, w, check marks, scripts. */
const edgyText = fc
  .array(
    fc.oneof(
      fc.constantFrom(..."0123456789 -.:,/ABCDEGXZwWxaeilost*•…✓✅’'\n\u00A0\u200B\u0301Σжé🚚".split("")),
      fc.constantFrom("www.", "WwW.", "DE89", "GB82WEST", "ending in ", "**** ", "\uD800", "\uDC00"),
      fc.constantFrom("mailto:", "TEL:", "sms:", "Data:", "javascript:", "FILE:", "intent:", "x", "1", " "),
      fc.constantFrom(".com", ".De", ".IO", "acme", ". ", ".\u00E9", "@"),
      fc.constantFrom("DE89 3704 0044 0532 0130 00", "GB82WEST12345698765432", "1234 5678", "1234-5678-9", "account "),
      fc.constantFrom(...impersonationPhrases.flatMap((phrase) => phrase.catches)),
    ),
    { maxLength: 24 },
  )
  .map((parts) => parts.join(""));
const anyText = fc.oneof(edgyText, fc.string({ unit: "binary", maxLength: 40 }), fc.string({ maxLength: 40 }));

/** A key JavaScript treats apart: array indexes come first in any object, `__proto__` is the prototype. */
const awkwardKey = fc.constantFrom("__proto__", "0", "1", "10", "4294967295", "01", "-1", "", "é", "\u20AC", "😀");
const jsonWithAwkwardKeys = fc
  .dictionary(fc.oneof(awkwardKey, fc.string({ maxLength: 4 })), fc.jsonValue({ maxDepth: 3 }), { maxKeys: 6 })
  .map((record) => JSON.parse(JSON.stringify(record)) as unknown);

describe("canonical JSON", () => {
  it("is what the plain RFC 8785 writer gives, for any JSON", () => {
    fc.assert(
      fc.property(fc.oneof(fc.jsonValue(), jsonWithAwkwardKeys), (value) => {
        expect(canonicalJson(value)).toBe(referenceCanonical(value));
      }),
      { numRuns: 1000 },
    );
  });

  it("sorts objects with many keys as sort() does", () => {
    fc.assert(
      fc.property(
        fc.dictionary(fc.string({ unit: "binary", maxLength: 3 }), fc.integer(), { minKeys: 10 }),
        (value) => {
          const wellFormed = Object.keys(value).every((key) => key.isWellFormed());
          if (wellFormed) expect(canonicalJson(value)).toBe(referenceCanonical(value));
          else expect(() => canonicalJson(value)).toThrow(TypeError);
        },
      ),
      { numRuns: 300 },
    );
  });

  it("encodes UTF-8 and digests as TextEncoder and createHash do, whatever the length", () => {
    const lengths = fc.oneof(
      fc.constant(0),
      fc.integer({ min: 1, max: 200 }),
      fc.integer({ min: 20_000, max: 70_000 }),
    );
    fc.assert(
      fc.property(fc.string({ unit: "grapheme", maxLength: 50 }), lengths, (piece, length) => {
        const text = piece.length === 0 ? "" : piece.repeat(Math.ceil(length / piece.length));
        const expected = new TextEncoder().encode(text);
        expect(Buffer.from(utf8(text)).equals(Buffer.from(expected))).toBe(true);
        expect(canonicalDigest(text)).toBe(createHash("sha256").update(expected).digest("base64url"));
      }),
      { numRuns: 100 },
    );
  });
});

describe("pattern matches", () => {
  const patterns = [/\d+/g, /a*/g, /(?:)/gu, /\p{L}*/gu, /[.\uD83D]/g, /(?<word>[a-z]+)|(?<digit>\d)/gi];
  it("lists what matchAll lists, empty matches and surrogate pairs included", () => {
    fc.assert(
      fc.property(fc.constantFrom(...patterns), anyText, (pattern, text) => {
        const simple = (matches: RegExpExecArray[] | RegExpMatchArray[]) =>
          matches.map((match) => [match.index, ...match, JSON.stringify(match.groups)]);
        expect(simple(matchesOf(pattern, text))).toEqual(simple([...text.matchAll(pattern)]));
      }),
      { numRuns: 1000 },
    );
  });
});

/** The character pass's hints for a text, as the screening computes them before the later rules. */
function screened(text: string, label?: string): VisibleText {
  const item: VisibleText = { path: "/t", text, multiline: true, label };
  checkCharacters(item, new Findings());
  return item;
}

describe("rules that skip work on the character pass's hints", () => {
  it("accounts: the hints never hide an account the full search finds", () => {
    fc.assert(
      fc.property(anyText, fc.option(fc.constantFrom("IBAN", "Account", "Total")), (text, label) => {
        const item = screened(text, label ?? undefined);
        expect(findAccounts(text, item.label, item.hints)).toEqual(findAccounts(text, item.label));
      }),
      { numRuns: 2000 },
    );
  });

  it("links: a text the colon and www. scan passes over holds no OTHER_URL", () => {
    fc.assert(
      fc.property(anyText, (text) => {
        if (OTHER_URL.test(text)) expect(mayHoldOtherUrl(text)).toBe(true);
      }),
      { numRuns: 2000 },
    );
  });

  it("links: a text the dot scan passes over holds no top-level domain", () => {
    const domain = new RegExp(TOP_LEVEL_DOMAIN.source, "i");
    fc.assert(
      fc.property(anyText, (text) => {
        if (domain.test(text)) expect(mayHoldDomain(text)).toBe(true);
      }),
      { numRuns: 2000 },
    );
  });
});

/** The impersonation search as one pattern with every phrase as an alternative, the texts searched one by one. */
function referenceImpersonations(texts: string[]): (string | undefined)[] {
  const group = (id: string) => id.replaceAll("-", "_");
  const alternative = ({ id, pattern }: { id: string; pattern: string }) => `(?<${group(id)}>${phraseSource(pattern)})`;
  const opensWithWord = ({ pattern }: { pattern: string }) => /^(?:\(\?:)?[a-z0-9]/.test(pattern);
  const words = impersonationPhrases.filter(opensWithWord).map(alternative);
  const symbols = impersonationPhrases.filter((phrase) => !opensWithWord(phrase)).map(alternative);
  const all = new RegExp(`\\b(?:${words.join("|")})(?![a-z0-9])|${symbols.join("|")}`, "g");
  const letterOrDigit = /[\p{L}\p{N}]/u;
  return texts.map((text) => {
    const searched = `${text.normalize("NFKC").toLowerCase()}\u0000`;
    all.lastIndex = 0;
    for (let match = all.exec(searched); match !== null; match = all.exec(searched)) {
      const end = match.index + match[0].length;
      const inWord =
        (match.index > 0 && letterOrDigit.test(searched.charAt(match.index - 1))) ||
        letterOrDigit.test(searched.charAt(end));
      if (!inWord) return impersonationPhrases.find((phrase) => match?.groups?.[group(phrase.id)] !== undefined)?.id;
      all.lastIndex = match.index + 1;
    }
    return undefined;
  });
}

describe("impersonation search", () => {
  it("finds, text by text, what one pattern over each text alone finds", () => {
    fc.assert(
      fc.property(fc.array(anyText, { maxLength: 6 }), (texts) => {
        const items = texts.map((text) => screened(text));
        expect(findImpersonations(items)).toEqual(referenceImpersonations(texts));
      }),
      { numRuns: 2000 },
    );
  });
});
