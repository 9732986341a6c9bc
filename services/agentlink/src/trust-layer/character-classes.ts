/**
 * What the character rules need to know about each code point, as bit flags. V8 tests Unicode property
 * classes (`\p{…}` with the `u` flag) an order of magnitude slower than it reads an array, and these rules
 * look at every character of every text, so the Basic Multilingual Plane is tabulated once at start (some tens
 * of milliseconds) and the rare astral code points (emoji, tag characters) are classified on demand.
 */
export const BIDI = 1;
/** Format characters (Cf) other than bidi controls, fillers that draw nothing, non-emoji variation selectors. */
export const INVISIBLE = 2;
/** Control characters other than the line break, and the line and paragraph separators. */
export const CONTROL = 4;
/** Unassigned code points (Cn); lone surrogates are found by position, not by table. */
export const UNASSIGNED = 8;
export const PRIVATE_USE = 16;
export const MARK = 32;
export const GREEK_LETTER = 64;
export const CYRILLIC_LETTER = 128;
/** Letters and decimal digits of any script: what words are made of. */
export const LETTER_OR_DIGIT = 256;
/** Whitespace, format, control and filler characters: what empty-looking text is made of. */
export const BLANK = 512;
export const PICTOGRAPHIC = 1024;
/** Whitespace other than the space and the line break (tabs, no-break and typographic spaces). */
export const OTHER_WHITESPACE = 2048;
export const CURRENCY_SIGN = 4096;
/** Characters that NFKC changes (fullwidth forms, ligatures, styled letters), besides case. */
export const COMPATIBILITY = 8192;

const rules: [number, RegExp][] = [
  [BIDI, /[\u202A-\u202E\u2066-\u2069\u200E\u200F\u061C]/u],
  [INVISIBLE, /[^\P{Cf}\u202A-\u202E\u2066-\u2069\u200E\u200F\u061C]/u],
  // biome-ignore lint/suspicious/noMisleadingCharacterClass: the variation selectors are listed on purpose; they are what this class finds.
  [INVISIBLE, /[\u115F\u1160\u3164\uFFA0\u2800\uFE00-\uFE0D\u{E0100}-\u{E01EF}]/u],
  [CONTROL, /[^\P{Cc}\n]|[\u2028\u2029]/u],
  [UNASSIGNED, /\p{Cn}/u],
  [PRIVATE_USE, /\p{Co}/u],
  [MARK, /\p{M}/u],
  [GREEK_LETTER, /(?=\p{L})\p{Script=Greek}/u],
  [CYRILLIC_LETTER, /(?=\p{L})\p{Script=Cyrillic}/u],
  [LETTER_OR_DIGIT, /[\p{L}\p{Nd}]/u],
  [BLANK, /[\s\p{Cf}\p{Cc}\u115F\u1160\u3164\uFFA0\u2800]/u],
  [PICTOGRAPHIC, /\p{Extended_Pictographic}/u],
  [OTHER_WHITESPACE, /[^\S \n]/u],
  [CURRENCY_SIGN, /\p{Sc}/u],
];
/** A superset of the characters NFKC changes; each is then tried (a few thousand, at start). */
const NFKC_CANDIDATE = /\p{Changes_When_NFKC_Casefolded}/gu;

const changedByNfkc = (character: string) => character.normalize("NFKC") !== character;
const classify = (character: string) =>
  rules.reduce(
    (flags, [flag, rule]) => (rule.test(character) ? flags | flag : flags),
    changedByNfkc(character) ? COMPATIBILITY : 0,
  );

const basic = new Uint16Array(0x10000);
{
  // Every code unit but the surrogates, once; each rule then marks the runs it matches (few, so this is fast).
  const unitAt = (index: number) => (index < 0xd800 ? index : index + 0x800);
  const units = new Uint16Array(0x10000 - 0x800);
  for (let index = 0; index < units.length; index++) units[index] = unitAt(index);
  const all = new TextDecoder("utf-16le").decode(units);
  for (const [flag, rule] of rules) {
    for (const match of all.matchAll(new RegExp(`(?:${rule.source})+`, "gu"))) {
      for (let index = match.index; index < match.index + match[0].length; index++) {
        const unit = unitAt(index);
        basic[unit] = (basic[unit] ?? 0) | flag;
      }
    }
  }
  for (const [character] of all.matchAll(NFKC_CANDIDATE)) {
    const unit = character.charCodeAt(0);
    if (changedByNfkc(character)) basic[unit] = (basic[unit] ?? 0) | COMPATIBILITY;
  }
}

const astral = new Map<number, number>();
const MAX_REMEMBERED_ASTRAL = 4096;

/** The flags of a code point. */
export function flagsOf(codePoint: number): number {
  if (codePoint < 0x10000) return basic[codePoint] ?? 0;
  let flags = astral.get(codePoint);
  if (flags === undefined) {
    flags = classify(String.fromCodePoint(codePoint));
    if (astral.size < MAX_REMEMBERED_ASTRAL) astral.set(codePoint, flags);
  }
  return flags;
}
