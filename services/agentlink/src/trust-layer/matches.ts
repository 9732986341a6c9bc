/**
 * Every match of a global pattern in a text, in order, as `text.matchAll(pattern)` lists them. `matchAll`
 * copies the pattern on each call (the language constructs a new RegExp for it), which on a card's short texts
 * costs more than the search itself; this runs the pattern's own `exec` instead.
 */
export function matchesOf(pattern: RegExp, text: string): RegExpExecArray[] {
  const found: RegExpExecArray[] = [];
  pattern.lastIndex = 0;
  for (let match = pattern.exec(text); match !== null; match = pattern.exec(text)) {
    found.push(match);
    // An empty match would be found again: step over one character (a code point under the `u` flag).
    if (match[0].length === 0) {
      const at = pattern.lastIndex;
      const pair = pattern.unicode && isHigh(text.charCodeAt(at)) && isLow(text.charCodeAt(at + 1));
      pattern.lastIndex += pair ? 2 : 1;
    }
  }
  return found;
}

const isHigh = (unit: number) => unit >= 0xd800 && unit <= 0xdbff;
const isLow = (unit: number) => unit >= 0xdc00 && unit <= 0xdfff;
