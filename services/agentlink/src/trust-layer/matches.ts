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
      const unit = text.charCodeAt(pattern.lastIndex);
      const pair = pattern.unicode && unit >= 0xd800 && unit <= 0xdbff && text.length > pattern.lastIndex + 1;
      pattern.lastIndex += pair ? 2 : 1;
    }
  }
  return found;
}
