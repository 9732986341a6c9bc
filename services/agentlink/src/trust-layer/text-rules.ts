import type { VisibleText } from "./card-structure.ts";
import {
  BIDI,
  BLANK,
  COMPATIBILITY,
  CONTROL,
  CURRENCY_SIGN,
  CYRILLIC_LETTER,
  flagsOf,
  GREEK_LETTER,
  INVISIBLE,
  LETTER_OR_DIGIT,
  MARK,
  OTHER_WHITESPACE,
  PICTOGRAPHIC,
  PRIVATE_USE,
  UNASSIGNED,
} from "./character-classes.ts";
import type { Findings } from "./findings.ts";

/**
 * What the character pass notices for the rules after it, so that they skip texts or patterns they cannot apply
 * to: four digits in a row (single spaces or hyphens between allowed), which every account form has, and eight,
 * which an unformatted account number has; two capitals right before a digit, which an IBAN has; a currency
 * sign or three capitals in a row, which every amount has; characters NFKC would change.
 */
export const TextHint = { digits: 1, currency: 2, compatibility: 4, longDigitRun: 8, capitalsThenDigit: 16 } as const;
const ALL_HINTS =
  TextHint.digits | TextHint.currency | TextHint.compatibility | TextHint.longDigitRun | TextHint.capitalsThenDigit;

const ZERO_WIDTH_JOINER = 0x200d;
const isLowercase = (unit: number) => unit >= 0x61 && unit <= 0x7a;
const isVariationSelector = (unit: number) => unit === 0xfe0e || unit === 0xfe0f;
/** Four line breaks with only whitespace between them, 20 spaces or 5 other whitespace characters in a row. */
const PADDING = { lineBreaks: 4, spaces: 20, otherWhitespace: 5 } as const;
const MAX_MARKS_IN_A_ROW = 4;

/**
 * The character and appearance rules, applied to one visible text in a single pass over its characters:
 * bidi controls, invisible and control characters, unassigned and private-use code points, stacked marks,
 * mixed-script words, blank text and whitespace padding. Sets the text's `hints`.
 */
export function checkCharacters(item: VisibleText, findings: Findings): void {
  const { text, path } = item;
  let seen = 0;
  let hints = 0;
  let digits = 0;
  let separated = false;
  let capitals = 0;
  let blank = true;
  let marksInARow = 0;
  let lineBreaks = 0;
  let spaces = 0;
  let otherWhitespace = 0;
  let padded = false;
  let stacked = false;
  let loneSurrogate = false;
  let mixedScript = false;
  // The word being read: which kinds of letters it holds so far.
  let wordGreek = false;
  let wordCyrillic = false;
  let wordOther = false;
  let previousPictographic = false;

  for (let index = 0; index < text.length; index++) {
    const unit = text.charCodeAt(index);
    if (unit < 0x7f && unit > 0x20) {
      // Printable ASCII, the common case: a letter or digit continues a word, anything else ends it.
      blank = false;
      marksInARow = 0;
      lineBreaks = 0;
      spaces = 0;
      otherWhitespace = 0;
      previousPictographic = false;
      if (unit >= 0x61 && unit <= 0x7a) {
        // A lowercase letter, most of any text. The lowercase letters after it change nothing more, nor does a
        // single space between two lowercase words (it ends a word that the next, plain Latin, starts again):
        // both are skipped.
        digits = capitals = 0;
        wordOther = true;
        if (wordGreek || wordCyrillic) mixedScript = true;
        while (index + 1 < text.length) {
          const next = text.charCodeAt(index + 1);
          if (isLowercase(next)) index++;
          else if (next === 0x20 && index + 2 < text.length && isLowercase(text.charCodeAt(index + 2))) {
            index += 2;
            wordGreek = wordCyrillic = false;
          } else break;
        }
        continue;
      }
      if (unit >= 0x30 && unit <= 0x39) {
        separated = false;
        if (++digits >= 4) hints |= digits >= 8 ? TextHint.digits | TextHint.longDigitRun : TextHint.digits;
        if (capitals >= 2) hints |= TextHint.capitalsThenDigit;
      } else if (unit === 0x2d && digits > 0 && !separated) separated = true;
      else digits = 0;
      if (unit >= 0x41 && unit <= 0x5a) {
        if (++capitals >= 3) hints |= TextHint.currency;
      } else capitals = 0;
      if (unit === 0x24) hints |= TextHint.currency;
      if ((unit >= 0x30 && unit <= 0x39) || (unit >= 0x41 && unit <= 0x5a) || (unit >= 0x61 && unit <= 0x7a)) {
        wordOther = true;
        if (wordGreek || wordCyrillic) mixedScript = true;
      } else wordGreek = wordCyrillic = wordOther = false;
      continue;
    }
    let codePoint = unit;
    if (unit >= 0xd800 && unit <= 0xdfff) {
      const next = text.charCodeAt(index + 1);
      if (unit <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
        codePoint = ((unit - 0xd800) << 10) + (next - 0xdc00) + 0x10000;
        index++;
      } else {
        loneSurrogate = true;
        continue;
      }
    }
    capitals = 0;
    if (codePoint !== 0x20) digits = 0;
    if (codePoint === 0x0a) {
      if (!item.multiline) seen |= CONTROL;
      if (++lineBreaks >= PADDING.lineBreaks) padded = true;
      spaces = otherWhitespace = 0;
      wordGreek = wordCyrillic = wordOther = false;
      continue;
    }
    if (codePoint === 0x20) {
      if (digits > 0 && !separated) separated = true;
      else digits = 0;
      if (++spaces >= PADDING.spaces) padded = true;
      otherWhitespace = 0;
      marksInARow = 0;
      wordGreek = wordCyrillic = wordOther = false;
      previousPictographic = false;
      continue;
    }
    let flags = flagsOf(codePoint);
    if (codePoint === ZERO_WIDTH_JOINER && previousPictographic && joinsPictograph(text, index + 1))
      flags &= ~INVISIBLE;
    seen |= flags;
    if (flags & CURRENCY_SIGN) hints |= TextHint.currency;
    if (flags & (COMPATIBILITY | MARK)) hints |= TextHint.compatibility;
    if ((flags & BLANK) === 0) blank = false;
    if (flags & OTHER_WHITESPACE) {
      if (++otherWhitespace >= PADDING.otherWhitespace) padded = true;
    } else if ((flags & BLANK) === 0) lineBreaks = spaces = otherWhitespace = 0;
    if (flags & MARK) {
      if (++marksInARow > MAX_MARKS_IN_A_ROW) stacked = true;
    } else marksInARow = 0;
    if (!isVariationSelector(codePoint) && codePoint !== ZERO_WIDTH_JOINER)
      previousPictographic = (flags & PICTOGRAPHIC) !== 0;
    // Format characters neither join nor split words: a zero-width space cannot hide a look-alike.
    if (flags & (LETTER_OR_DIGIT | MARK | INVISIBLE | BIDI)) {
      if (flags & GREEK_LETTER) wordGreek = true;
      else if (flags & CYRILLIC_LETTER) wordCyrillic = true;
      else if (flags & LETTER_OR_DIGIT) wordOther = true;
      if ((wordGreek || wordCyrillic) && (wordOther || (wordGreek && wordCyrillic))) mixedScript = true;
    } else wordGreek = wordCyrillic = wordOther = false;
  }

  // A lone surrogate or a control character could hide what the hints look for: then every rule runs.
  item.hints = loneSurrogate || seen & (CONTROL | INVISIBLE | BIDI) ? ALL_HINTS : hints;
  if (blank) findings.add("blank_text", path, text);
  if (padded) findings.add("whitespace_padding", path, text);
  if (seen & BIDI) findings.add("bidi_control", path, text);
  if (seen & INVISIBLE) findings.add("invisible_character", path, text);
  if (seen & CONTROL) findings.add("control_character", path, text);
  if (seen & UNASSIGNED || loneSurrogate) findings.add("unassigned_character", path, text);
  if (seen & PRIVATE_USE) findings.add("private_use_character", path, text);
  if (stacked) findings.add("combining_mark_stack", path, text);
  if (mixedScript) findings.add("mixed_script", path, text);
}

/** Whether the code point at `index` (after a zero-width joiner) is a pictograph, as in a family emoji. */
function joinsPictograph(text: string, index: number): boolean {
  const next = text.codePointAt(index);
  return next !== undefined && (flagsOf(next) & PICTOGRAPHIC) !== 0;
}
