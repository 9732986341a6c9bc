import type { VisibleText } from "./card-structure.ts";
import type { Findings } from "./findings.ts";

/** Printable ASCII (and line breaks): text made only of these skips the Unicode rules below. */
const PLAIN = /^[\x20-\x7E\n]*$/;

const BIDI = /[\u202A-\u202E\u2066-\u2069\u200E\u200F\u061C]/u;
const BIDI_ALL = new RegExp(BIDI.source, "gu");
/**
 * Format characters (Cf: zero-width space and joiners, soft hyphen, tag characters used to smuggle text),
 * fillers that are letters but draw nothing, and variation selectors other than the emoji ones. A zero-width
 * joiner between two pictographs (family emoji) is allowed and removed before this test.
 */
const INVISIBLE = /[\p{Cf}\u115F\u1160\u3164\uFFA0\u2800\uFE00-\uFE0D\u{E0100}-\u{E01EF}]/u;
const EMOJI_JOINER = /(?<=\p{Extended_Pictographic}[\uFE0E\uFE0F]?)\u200D(?=\p{Extended_Pictographic})/gu;
const CONTROL = /[\p{Cc}\u2028\u2029]/u;
const CONTROL_EXCEPT_NEWLINE = /[^\P{Cc}\n]|[\u2028\u2029]/u;
const UNASSIGNED = /[\p{Cn}\p{Cs}]/u;
const PRIVATE_USE = /\p{Co}/u;
const MARK_STACK = /\p{M}{5}/u;

const NON_LATIN_LOOKALIKE_SCRIPT = /[\p{Script=Cyrillic}\p{Script=Greek}]/u;
const FORMAT_ALL = /\p{Cf}/gu;
const WORD = /[\p{L}\p{M}\p{Nd}]+/gu;
const LATIN = /\p{Script=Latin}/u;
const CYRILLIC = /\p{Script=Cyrillic}/u;
const GREEK = /\p{Script=Greek}/u;
const ASCII_DIGIT = /[0-9]/;

/** Empty-looking: nothing but whitespace, format characters and fillers. */
const BLANK = /^[\s\p{Cf}\p{Cc}\u115F\u1160\u3164\uFFA0\u2800]*$/u;
const PADDING = /\n[^\S\n]*\n[^\S\n]*\n[^\S\n]*\n| {20}|[^\S\n ]{5}/u;

/** The character and appearance rules, applied to one visible text. */
export function checkCharacters(item: VisibleText, findings: Findings): void {
  const { text, path } = item;
  if (BLANK.test(text)) findings.add("blank_text", path, text);
  if (PADDING.test(text)) findings.add("whitespace_padding", path, text);
  if (PLAIN.test(text)) {
    if (!item.multiline && text.includes("\n")) findings.add("control_character", path, text);
    return;
  }
  if (BIDI.test(text)) findings.add("bidi_control", path, text);
  if (INVISIBLE.test(text.replace(EMOJI_JOINER, "").replace(BIDI_ALL, ""))) findings.add("invisible_character", path, text);
  if ((item.multiline ? CONTROL_EXCEPT_NEWLINE : CONTROL).test(text)) findings.add("control_character", path, text);
  if (UNASSIGNED.test(text)) findings.add("unassigned_character", path, text);
  if (PRIVATE_USE.test(text)) findings.add("private_use_character", path, text);
  if (MARK_STACK.test(text)) findings.add("combining_mark_stack", path, text);
  if (NON_LATIN_LOOKALIKE_SCRIPT.test(text) && hasMixedScriptWord(text)) findings.add("mixed_script", path, text);
}

/**
 * In the spirit of Unicode TS #39's mixed-script detection: a word that uses Latin together with Cyrillic
 * or Greek letters, or ASCII digits together with Cyrillic or Greek letters (`1О0` with a Cyrillic O), is
 * how a look-alike of a familiar name or number is built. Whole words in one script are fine. Invisible
 * characters are taken out first, so a zero-width space cannot split a look-alike into "words".
 */
function hasMixedScriptWord(text: string): boolean {
  for (const [word] of text.replace(FORMAT_ALL, "").matchAll(WORD)) {
    if (!NON_LATIN_LOOKALIKE_SCRIPT.test(word)) continue;
    const scripts = (LATIN.test(word) ? 1 : 0) + (CYRILLIC.test(word) ? 1 : 0) + (GREEK.test(word) ? 1 : 0);
    if (scripts > 1 || ASCII_DIGIT.test(word)) return true;
  }
  return false;
}
