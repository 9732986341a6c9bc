/**
 * Phrases by which a card speaks as the service's own confirmation UI or verdict. Matched case-insensitively,
 * after NFKC normalization and with whitespace collapsed, at word boundaries. Each entry carries texts it must
 * catch; `benignTexts` are texts none may catch. Both are run by the tests.
 */
export type ImpersonationPhrase = { id: string; pattern: string; catches: string[] };

export const impersonationPhrases: ImpersonationPhrase[] = [
  { id: "verified-by", pattern: "verified by", catches: ["Verified by Agents Ask", "Payment verified by your bank"] },
  {
    id: "security-check-passed",
    pattern: "security (?:check|scan|review) (?:passed|complete|completed|ok|succeeded)",
    catches: ["Security check passed", "security scan completed"],
  },
  {
    id: "action-is-safe",
    pattern:
      "(?:this|the) (?:action|request|payment|transfer|transaction|card|merge|login) is " +
      "(?:safe|secure|verified|legitimate|trusted)",
    catches: ["This action is safe", "The payment is verified."],
  },
  {
    id: "approve-means-cancel",
    pattern:
      "(?:tap|press|click|select|choose|hit|swipe) (?:on )?(?:approve|confirm|accept|yes) (?:to|will) " +
      "(?:cancel|deny|decline|reject|stop|block|undo|refuse)",
    catches: ["Tap Approve to cancel", "press confirm to reject this charge"],
  },
  {
    id: "approving-cancels",
    pattern: "approv(?:e|ing) (?:will|to|does) (?:cancel|deny|decline|reject|stop|block|undo|not)",
    catches: ["Approving will cancel the order", "approve does not send money"],
  },
  {
    id: "deny-means-approve",
    pattern:
      "(?:tap|press|click|select|choose) (?:on )?(?:deny|decline|reject|no) (?:to|will) " +
      "(?:approve|confirm|accept|pay|continue)",
    catches: ["Tap Deny to approve"],
  },
  {
    id: "do-not-deny",
    pattern: "(?:do not|don't|never) (?:deny|decline|reject)",
    catches: ["Do not deny this request"],
  },
  {
    id: "safe-to-approve",
    pattern: "safe to (?:approve|confirm|accept)",
    catches: ["It is safe to approve.", "éthis action is safe to approve", "x✅ safe to approve"],
  },
  {
    id: "already-verified",
    pattern: "(?:has|have) already been (?:approved|verified|authori[sz]ed|confirmed)",
    catches: ["This transfer has already been approved"],
  },
  {
    id: "identity-verified",
    pattern:
      "(?:identity|passkey|biometric|face id|fingerprint|2fa|mfa) (?:check |verification )?" +
      "(?:passed|confirmed|verified|complete|completed|successful)",
    catches: ["Identity verified", "Passkey verification successful"],
  },
  { id: "no-risk", pattern: "no (?:risk|threats?|fraud) (?:detected|found)", catches: ["No risk detected"] },
  {
    id: "official",
    pattern: "official (?:confirmation|verification|security notice|approval)",
    catches: ["Official confirmation"],
  },
  {
    id: "card-was-screened",
    pattern: "(?:this|the) (?:card|request|proposal) (?:has been|was|is) (?:verified|screened|checked|approved)",
    catches: ["This card has been verified"],
  },
  {
    id: "check-mark-verdict",
    pattern: "[✓✔☑✅] ?(?:verified|approved|safe|secure|trusted)",
    catches: ["✅ Safe", "✔ Verified", "✅safe"],
  },
  {
    id: "not-a-payment",
    pattern: "(?:this is )?not a (?:payment|charge|transfer|purchase)",
    catches: ["This is not a payment", "not a charge, just a check"],
  },
  {
    id: "service-speaks",
    pattern: "agents ask (?:says|verified|approved|confirms|guarantees|security|team)",
    catches: ["Agents Ask security team"],
  },
];

/** Realistic card texts that mention verification, safety or approval without speaking as the app. */
export const benignTexts = [
  "Merge pull request #482 into main",
  "Approve the expense report for the Berlin offsite",
  "Payment of 120.50 EUR to Acme Office Supplies",
  "Seat 14C, window, verified passport required at check-in",
  "The safety briefing starts at 09:00",
  "Security deposit: 300 EUR, refunded at checkout",
  "Reviewed by: Dana Okafor",
  "Deny access to the staging database for contractors",
];

import { TextHint } from "./text-rules.ts";

/** Printable ASCII is already in NFKC; only other text pays for normalization. */
const PLAIN = /^[\x20-\x7E\n]*$/;
const LETTER_OR_DIGIT = /[\p{L}\p{N}]/u;

/**
 * The phrases as patterns, a named group each; spaces stand for any run of whitespace. Phrases that start with a
 * word are tried only at ASCII word starts (`\b`) and end at an ASCII word boundary (so `complete` gives way to
 * `completed`); the Unicode boundaries on either side are checked by hand on each match. Without the `u` flag
 * and with `\b` in front, V8 scans several times faster.
 */
const pattern = (phrase: ImpersonationPhrase) => `(?<${groupName(phrase.id)}>${phraseSource(phrase.pattern)})`;

/** A phrase's pattern as searched: a space is any run of whitespace, an optional space (` ?`) any or none. */
export const phraseSource = (phrase: string) =>
  phrase.replaceAll(" ?", "\\s*").replaceAll(" ", "\\s+").replaceAll("'", "['’]");
/** Phrases that open with a letter or digit, possibly inside a group: `\b` may stand before them. */
const STARTS_WITH_WORD = /^(?:\(\?:)?[a-z0-9]/;
const wordPhrases = impersonationPhrases.filter((phrase) => STARTS_WITH_WORD.test(phrase.pattern));
const symbolPhrases = impersonationPhrases.filter((phrase) => !STARTS_WITH_WORD.test(phrase.pattern));
const alternatives = (phrases: ImpersonationPhrase[], around: (choice: string) => string) =>
  phrases.length === 0 ? undefined : new RegExp(around(phrases.map(pattern).join("|")), "g");
const WORD_PHRASES = alternatives(wordPhrases, (choice) => `\\b(?:${choice})(?![a-z0-9])`);
const SYMBOL_PHRASES = alternatives(symbolPhrases, (choice) => choice);

/**
 * The code units the symbol phrases can open with, when each opens with a plain character class (`[✓✔☑✅]`):
 * the symbol pattern then runs only when the texts hold one. `undefined` when some phrase opens otherwise.
 */
const OPENING_SYMBOLS = (() => {
  const units: string[] = [];
  for (const phrase of symbolPhrases) {
    const opening = /^\[([^\]\\^-]+)\]/.exec(phrase.pattern)?.[1];
    if (opening === undefined) return undefined;
    units.push(...opening.split(""));
  }
  return units;
})();

function groupName(id: string): string {
  return id.replaceAll("-", "_");
}

/** The id of the first impersonation phrase the text contains as whole words, if any. */
export function findImpersonation(text: string): string | undefined {
  return findImpersonations([{ text }])[0];
}

/**
 * For each text, the id of the first impersonation phrase it contains, if any. The texts are searched as one
 * string (joined by U+0000, which no phrase can span), since one long search costs less than many short ones.
 * A text whose character pass found nothing NFKC would change (its `hints`) skips normalization.
 */
export function findImpersonations(texts: { text: string; hints?: number }[]): (string | undefined)[] {
  const found: (string | undefined)[] = new Array(texts.length);
  const starts: number[] = [];
  let joined = "";
  for (const { text, hints } of texts) {
    starts.push(joined.length);
    const unchanged = hints === undefined ? PLAIN.test(text) : (hints & TextHint.compatibility) === 0;
    joined += `${(unchanged ? text : text.normalize("NFKC")).toLowerCase()}\u0000`;
  }
  const next = (phrases: RegExp | undefined, from: number) => {
    if (phrases === undefined) return null;
    phrases.lastIndex = from;
    return phrases.exec(joined);
  };
  const hasSymbol = OPENING_SYMBOLS === undefined || OPENING_SYMBOLS.some((unit) => joined.includes(unit));
  let word = next(WORD_PHRASES, 0);
  let symbol = hasSymbol ? next(SYMBOL_PHRASES, 0) : null;
  let owner = 0;
  while (word !== null || symbol !== null) {
    // The leftmost match, a word phrase first where both start, and the search goes on after it: what one
    // pattern with both kinds as alternatives finds, in two searches that each V8 runs faster.
    const match = (symbol === null || (word !== null && word.index <= symbol.index) ? word : symbol) as RegExpExecArray;
    const end = match.index + match[0].length;
    const inWord =
      (match.index > 0 && LETTER_OR_DIGIT.test(joined.charAt(match.index - 1))) ||
      LETTER_OR_DIGIT.test(joined.charAt(end));
    // A match inside a longer word uses up only its first character: a phrase within it or right after it
    // ("éthis action is safe to approve", "x✅ safe to approve") is still found.
    const resume = inWord ? match.index + 1 : end;
    if (word !== null && word.index < resume) word = next(WORD_PHRASES, resume);
    if (symbol !== null && symbol.index < resume) symbol = next(SYMBOL_PHRASES, resume);
    if (inWord) continue;
    while (owner + 1 < starts.length && (starts[owner + 1] ?? 0) <= match.index) owner++;
    found[owner] ??= impersonationPhrases.find((phrase) => match.groups?.[groupName(phrase.id)] !== undefined)?.id;
  }
  return found;
}
