import type { VisibleText } from "./card-structure.ts";
import type { Findings } from "./findings.ts";
import { matchesOf } from "./matches.ts";
import { TextHint } from "./text-rules.ts";

/** An account reference: its full number (letters and digits) when written out, or only its last four digits. */
type Account = { full?: string; last4: string };

const IBAN = /\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,4})?\b/g;
/** `**** 1234`, `•••• 1234`, `xxxx1234`, `ending in 1234`. */
const MASKED = /(?:[*•·xX]{2,}|…|\.{3})\s?(\d{4})\b|\bending (?:in|with) (\d{4})\b/g;
const DIGIT_RUN = /\b\d(?:[ -]?\d){7,33}\b/g;
/** Digit runs count as accounts only when labelled so; a date, an order number or a phone number is not one. */
const ACCOUNT_LABEL = /\b(?:account|acct|a\/c|iban|card|konto|routing|sort code|bsb)\b[^\n]{0,20}$/i;

/** Without the character pass's hints, every pattern runs. */
const EVERY_PATTERN = TextHint.capitalsThenDigit | TextHint.longDigitRun;
/** Every form above has four digits with at most single separators between them. */
const FOUR_DIGITS = /\d[ -]?\d[ -]?\d[ -]?\d/;

/** Skips the patterns whose necessary characters the character pass did not see (`hints`, all when unknown). */
export function findAccounts(text: string, label?: string, hints: number = EVERY_PATTERN): Account[] {
  const accounts: Account[] = [];
  if (!FOUR_DIGITS.test(text)) return accounts;
  const ibans = hints & TextHint.capitalsThenDigit ? matchesOf(IBAN, text) : [];
  for (const [match] of ibans) {
    const full = match.replaceAll(" ", "");
    accounts.push({ full, last4: full.slice(-4) });
  }
  for (const match of matchesOf(MASKED, text)) accounts.push({ last4: match[1] ?? match[2] ?? "" });
  const runs = hints & TextHint.longDigitRun ? matchesOf(DIGIT_RUN, text) : [];
  for (const match of runs) {
    const before = text.slice(Math.max(0, match.index - 30), match.index);
    if (!ACCOUNT_LABEL.test(before) && !(label !== undefined && ACCOUNT_LABEL.test(label))) continue;
    const full = match[0].replace(/\D/g, "");
    if (!accounts.some((account) => account.full?.endsWith(full))) accounts.push({ full, last4: full.slice(-4) });
  }
  return accounts;
}

const agrees = (a: Account, b: Account) =>
  a.full !== undefined && b.full !== undefined ? a.full === b.full : a.last4 === b.last4;

/** The account money leaves from: a card may show it beside the destination the title names. */
const SOURCE_LABEL = /^\s*(?:from|debit(?:ed)? from|pay(?:ing)? from|source|funding(?: account)?)\b/i;

/**
 * When the title names an account, every account in the card must be that one (or a masked form of it),
 * except one labelled as where the money comes from.
 */
export function checkAccounts(titleTexts: VisibleText[], cardTexts: VisibleText[], findings: Findings): void {
  const stated = titleTexts.flatMap((item) => findAccounts(item.text, item.label, item.hints));
  if (stated.length === 0) return;
  for (const item of cardTexts) {
    if (item.label !== undefined && SOURCE_LABEL.test(item.label)) continue;
    if (item.hints !== undefined && (item.hints & TextHint.digits) === 0) continue;
    const accounts = findAccounts(item.text, item.label, item.hints);
    if (accounts.some((account) => !stated.some((other) => agrees(account, other)))) {
      findings.add("account_mismatch", item.path, item.text);
    }
  }
}
