import type { VisibleText } from "./card-structure.ts";
import type { Findings } from "./findings.ts";
import { matchesOf } from "./matches.ts";
import { TextHint } from "./text-rules.ts";

export type Amount = { currency: string; value: number };

const CODES = [
  "EUR USD GBP JPY CHF CAD AUD NZD SEK NOK DKK PLN CZK HUF RON BGN INR CNY RUB UAH BRL MXN ZAR SGD HKD KRW TRY",
  "ILS AED SAR USDT USDC BTC ETH",
]
  .join(" ")
  .replaceAll(" ", "|");
/** Symbols with the currency they stand for; a bare `$` is read as USD. */
const SYMBOLS: Record<string, string> = {
  "€": "EUR",
  "£": "GBP",
  "¥": "JPY",
  "₹": "INR",
  "₽": "RUB",
  "₩": "KRW",
  "₺": "TRY",
  "₪": "ILS",
  "₴": "UAH",
  $: "USD",
  US$: "USD",
  CA$: "CAD",
  C$: "CAD",
  A$: "AUD",
  AU$: "AUD",
  NZ$: "NZD",
  HK$: "HKD",
  S$: "SGD",
};
const SYMBOL = "(?:US|CA|AU|NZ|HK|[CAS])?\\$|[€£¥₹₽₩₺₪₴]";
const NUMBER = "\\d{1,3}(?:[,.\\u00A0\\u202F' ]\\d{3})+(?:[.,]\\d{1,8})?|\\d+(?:[.,]\\d{1,8})?";
const AMOUNT = new RegExp(
  `(?:(?<prefix>${SYMBOL}|\\b(?:${CODES})\\b)\\s?-?(?<before>${NUMBER}))|` +
    `(?:(?<after>${NUMBER})\\s?(?<suffix>${SYMBOL}|(?:${CODES})\\b))`,
  "g",
);
/** Cheaper than AMOUNT and true wherever it could match: a currency sign, or three capitals. */
const HAS_CURRENCY = /[$€£¥₹₽₩₺₪₴]|[A-Z]{3}/;

const SEPARATOR = /[,.\u00A0\u202F' ]/g;

/**
 * Reads `1,234.56`, `1.234,56`, `1 234,56`, `10,50` and `10,000`: the last `,` or `.` is the decimal mark
 * when both kinds appear, or when it is the only separator and not followed by exactly three digits.
 */
export function parseNumber(raw: string): number {
  const separators = matchesOf(SEPARATOR, raw).map((match) => match[0]);
  const last = separators.at(-1);
  if (last === undefined) return Number(raw);
  const tail = raw.slice(raw.lastIndexOf(last) + 1);
  const mark = last === "," || last === ".";
  const decimal = mark && (new Set(separators).size > 1 || (separators.length === 1 && tail.length !== 3));
  const digits = decimal ? `${raw.slice(0, raw.lastIndexOf(last)).replace(/\D/g, "")}.${tail}` : raw.replace(/\D/g, "");
  return Number(digits);
}

/** Every amount with a currency written in the text, with the characters before it (its inline label). */
export function findAmounts(text: string): (Amount & { before: string })[] {
  if (!HAS_CURRENCY.test(text)) return [];
  const amounts: (Amount & { before: string })[] = [];
  for (const match of matchesOf(AMOUNT, text)) {
    const groups = match.groups ?? {};
    const unit = groups.prefix ?? groups.suffix ?? "";
    const currency = SYMBOLS[unit] ?? unit.toUpperCase();
    const number = groups.before ?? groups.after ?? "";
    amounts.push({
      currency,
      value: parseNumber(number),
      before: text.slice(Math.max(0, match.index - 30), match.index),
    });
  }
  return amounts;
}

/** A label that says the amount is what is paid in total, not a line item. */
const TOTAL_LABEL = new RegExp(
  "(?:^|[\\n.;|]\\s*|\\s)(?:grand\\s+)?(?:total|amount|you pay|to pay|charge|price)" +
    "(?:\\s+(?:due|amount|to pay|price|cost))?\\s*:?\\s*$",
  "i",
);

/**
 * Honesty of amounts against the title: when `summary_title` or `summary_detail` names an amount, no amount in
 * the card may exceed it in its currency, an amount labelled as the total must equal it, and the card's amounts
 * must not all be in other currencies.
 */
export function checkAmounts(titleTexts: VisibleText[], cardTexts: VisibleText[], findings: Findings): void {
  const stated = titleTexts.flatMap((item) => findAmounts(item.text));
  if (stated.length === 0) return;
  const highest = new Map<string, number>();
  for (const amount of stated) highest.set(amount.currency, Math.max(highest.get(amount.currency) ?? 0, amount.value));
  let foreign: VisibleText | undefined;
  let sameCurrency = false;
  for (const item of cardTexts) {
    if (item.hints !== undefined && (item.hints & TextHint.currency) === 0) continue;
    for (const amount of findAmounts(item.text)) {
      const limit = highest.get(amount.currency);
      if (limit === undefined) {
        foreign ??= item;
        continue;
      }
      sameCurrency = true;
      const isTotal = TOTAL_LABEL.test(amount.before) || (item.label !== undefined && TOTAL_LABEL.test(item.label));
      const matchesStated = stated.some((other) => other.currency === amount.currency && other.value === amount.value);
      if (amount.value > limit || (isTotal && !matchesStated)) findings.add("amount_mismatch", item.path, item.text);
    }
  }
  if (foreign !== undefined && !sameCurrency) findings.add("currency_mismatch", foreign.path, foreign.text);
}
