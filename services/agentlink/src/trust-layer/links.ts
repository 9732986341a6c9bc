import type { VisibleText } from "./card-structure.ts";
import type { Findings } from "./findings.ts";
import { matchesOf } from "./matches.ts";

/** `[text](target)` and `![alt](target)`, the forms Adaptive Cards' Markdown subset renders as links. */
const MARKDOWN_LINK = /!?\[([^\]\n]{0,500})\]\(\s*<?([^)\s>]{0,2000})>?(?:\s+"[^"\n]{0,200}")?\s*\)/g;
/** `[text][ref]` with `[ref]: target` elsewhere: the target is never where the text is. */
const REFERENCE_LINK = /^ {0,3}\[[^\]\n]{1,200}\]:\s*\S/m;
const SCHEME_URL = /[a-z][a-z0-9+.-]{0,20}:\/\/[^\s<>"']/i;
export const OTHER_URL = /\bwww\.[^\s<>"']|\b(?:mailto|tel|sms|data|javascript|file|intent):[^\s<>"']/i;
/**
 * Top-level domains people recognise, after the dot. Country domains that are also file extensions (`.ts`,
 * `.md`, `.py`) are left out so that file names are not taken for domains.
 */
const TOP_LEVEL_DOMAINS = [
  "com net org info biz app dev io ai xyz online site top shop store bank pay money finance link click help support",
  "secure login page live cloud tech services zip mov",
  "de uk fr it es nl be ch at se no dk fi pl cz ru ua cn jp kr in br ar mx ca au nz za eu us co me tv cc ly gg to ws",
  "su ir tk ml ga cf gq pw",
]
  .join(" ")
  .split(" ");
// Longest first, so that `.com` is not read as `.co` followed by a letter.
export const TOP_LEVEL_DOMAIN = new RegExp(
  `\\.(?:${TOP_LEVEL_DOMAINS.sort((a, b) => b.length - a.length).join("|")})`,
  "gi",
);
const HOST_CHARACTER = /[\p{L}\p{N}.-]/u;
const LETTER_OR_DIGIT = /[\p{L}\p{N}]/u;

/** Links, URLs and domains written in a visible text. */
export function checkLinks(item: VisibleText, findings: Findings): void {
  const { text, path } = item;
  if (text.includes("](")) {
    for (const [, label = "", target = ""] of matchesOf(MARKDOWN_LINK, text)) {
      if (sameAddress(label, target)) findings.add("markdown_link", path, text);
      else findings.add("link_hides_target", path, text);
    }
  }
  if (text.includes("]:") && REFERENCE_LINK.test(text)) findings.add("link_hides_target", path, text);
  if (hasUrl(text)) findings.add("url_in_text", path, text);
  else if (mayHoldDomain(text) && hasDomain(text)) findings.add("domain_in_text", path, text);
}

/** Each pattern runs only where its literal part (`://`, `:`, `www.`) appears. */
const hasUrl = (text: string) =>
  (text.includes("://") && SCHEME_URL.test(text)) ||
  ((text.includes(":") || text.includes("www.") || text.includes("WWW.")) &&
    mayHoldOtherUrl(text) &&
    OTHER_URL.test(text));

/** The last letters of OTHER_URL's schemes (mailto, tel, sms, data, javascript, file, intent), in lower case. */
const SCHEME_ENDINGS = new Set(["o", "l", "s", "a", "t", "e"].map((letter) => letter.charCodeAt(0)));
const LOWER_W = 0x77;
/** ASCII lower case of a letter; only the two cases of a letter fold to it, as OTHER_URL's `i` flag matches. */
const folded = (unit: number) => unit | 0x20;

/**
 * Whether OTHER_URL could match: a `:` right after one of its schemes' last letters, or `www.` in any case. Times
 * are written `08:30` and labels `Delivery 1:`, so most texts with a colon are passed over without the pattern.
 */
export function mayHoldOtherUrl(text: string): boolean {
  for (let at = text.indexOf(":"); at !== -1; at = text.indexOf(":", at + 1)) {
    if (at > 0 && SCHEME_ENDINGS.has(folded(text.charCodeAt(at - 1)))) return true;
  }
  if (!(text.includes("w.") || text.includes("W."))) return false;
  for (let at = text.indexOf("."); at !== -1; at = text.indexOf(".", at + 1)) {
    const w = (back: number) => folded(text.charCodeAt(at - back)) === LOWER_W;
    if (at >= 3 && w(1) && w(2) && w(3)) return true;
  }
  return false;
}

/**
 * Whether TOP_LEVEL_DOMAIN could match: a dot right before an ASCII letter (its `i` flag folds no other letter to
 * one). Sentences end in a dot and a space, so most texts with dots are passed over without the pattern.
 */
export function mayHoldDomain(text: string): boolean {
  for (let at = text.indexOf("."); at !== -1; at = text.indexOf(".", at + 1)) {
    const next = folded(text.charCodeAt(at + 1));
    if (next >= 0x61 && next <= 0x7a) return true;
  }
  return false;
}

/**
 * A host name ending in a known top-level domain, found from its last dot backwards. E-mail addresses are
 * left alone: an organiser's address in a calendar invite is not where the action goes.
 */
function hasDomain(text: string): boolean {
  for (const match of matchesOf(TOP_LEVEL_DOMAIN, text)) {
    const after = text.charAt(match.index + match[0].length);
    if (after === "@" || after === "-" || LETTER_OR_DIGIT.test(after)) continue;
    if (after === "." && LETTER_OR_DIGIT.test(text.charAt(match.index + match[0].length + 1))) continue;
    let start = match.index;
    while (start > 0 && HOST_CHARACTER.test(text.charAt(start - 1))) start--;
    const host = text.slice(start, match.index);
    if (text.charAt(start - 1) === "@" || host.includes("@")) continue;
    if (LETTER_OR_DIGIT.test(host.charAt(0)) && LETTER_OR_DIGIT.test(host.charAt(host.length - 1))) return true;
  }
  return false;
}

/** A link shows its target only when its text is that target, with or without `https://`, and the scheme is web. */
function sameAddress(label: string, target: string): boolean {
  if (!/^https?:\/\//i.test(target)) return false;
  const bare = (address: string) =>
    address
      .trim()
      .replace(/^https?:\/\//i, "")
      .replace(/\/$/, "")
      .toLowerCase();
  return bare(label) === bare(target);
}
