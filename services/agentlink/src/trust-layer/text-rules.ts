import type { VisibleText } from "./card-structure.ts";
import {
  BIDI,
  BLANK,
  CONTROL,
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

const ZERO_WIDTH_JOINER = 0x200d;
const isVariationSelector = (unit: number) => unit === 0xfe0e || unit === 0xfe0f;
/** Four line breaks with only whitespace between them, 20 spaces or 5 other whitespace characters in a row. */
const PADDING = { lineBreaks: 4, spaces: 20, otherWhitespace: 5 } as const;
const MAX_MARKS_IN_A_ROW = 4;

/**
 * The character and appearance rules, applied to one visible text in a single pass over its characters:
 * bidi controls, invisible and control characters, unassigned and private-use code points, stacked marks,
 * mixed-script words, blank text and whitespace padding.
 */
export function checkCharacters(item: VisibleText, findings: Findings): void {
  const { text, path } = item;
  let seen = 0;
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
    if (codePoint === 0x0a) {
      if (!item.multiline) seen |= CONTROL;
      if (++lineBreaks >= PADDING.lineBreaks) padded = true;
      spaces = otherWhitespace = 0;
      wordGreek = wordCyrillic = wordOther = false;
      continue;
    }
    if (codePoint === 0x20) {
      if (++spaces >= PADDING.spaces) padded = true;
      otherWhitespace = 0;
      marksInARow = 0;
      wordGreek = wordCyrillic = wordOther = false;
      previousPictographic = false;
      continue;
    }
    let flags = flagsOf(codePoint);
    if (codePoint === ZERO_WIDTH_JOINER && previousPictographic && joinsPictograph(text, index + 1)) flags &= ~INVISIBLE;
    seen |= flags;
    if ((flags & BLANK) === 0) blank = false;
    if (flags & OTHER_WHITESPACE) {
      if (++otherWhitespace >= PADDING.otherWhitespace) padded = true;
    } else if ((flags & BLANK) === 0) lineBreaks = spaces = otherWhitespace = 0;
    if (flags & MARK) {
      if (++marksInARow > MAX_MARKS_IN_A_ROW) stacked = true;
    } else marksInARow = 0;
    if (!isVariationSelector(codePoint) && codePoint !== ZERO_WIDTH_JOINER) previousPictographic = (flags & PICTOGRAPHIC) !== 0;
    // Format characters neither join nor split words: a zero-width space cannot hide a look-alike.
    if (flags & (LETTER_OR_DIGIT | MARK | INVISIBLE | BIDI)) {
      if (flags & GREEK_LETTER) wordGreek = true;
      else if (flags & CYRILLIC_LETTER) wordCyrillic = true;
      else if (flags & LETTER_OR_DIGIT) wordOther = true;
      if ((wordGreek || wordCyrillic) && (wordOther || (wordGreek && wordCyrillic))) mixedScript = true;
    } else wordGreek = wordCyrillic = wordOther = false;
  }

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
