import { describe, expect, it } from "vitest";
import { findAccounts } from "../src/trust-layer/accounts.ts";
import { findAmounts, parseNumber } from "../src/trust-layer/amounts.ts";
import { benignTexts, findImpersonation, impersonationPhrases } from "../src/trust-layer/impersonation-phrases.ts";

describe("impersonation phrases (data)", () => {
  it.each(impersonationPhrases)("$id catches its examples", ({ id, catches }) => {
    expect(catches.length).toBeGreaterThan(0);
    for (const example of catches) expect(findImpersonation(example)).toBe(id);
  });

  it.each(benignTexts)("leaves %j alone", (benign) => {
    expect(findImpersonation(benign)).toBeUndefined();
  });

  it("sees through case, width and spacing", () => {
    expect(findImpersonation("VERIFIED\u00A0\u00A0BY the bank")).toBe("verified-by");
    expect(findImpersonation("ＴＡＰ Ａｐｐｒｏｖｅ ｔｏ ｃａｎｃｅｌ")).toBe("approve-means-cancel");
  });

  it("matches whole words only", () => {
    expect(findImpersonation("unverified by design")).toBeUndefined();
  });
});

describe("amounts", () => {
  it.each([
    ["10", 10],
    ["10,000", 10_000],
    ["10.000", 10_000],
    ["1,234.56", 1234.56],
    ["1.234,56", 1234.56],
    ["1 234,56", 1234.56],
    ["10,50", 10.5],
    ["10.5", 10.5],
    ["1,000,000", 1_000_000],
  ])("reads %s as %d", (raw, value) => {
    expect(parseNumber(raw)).toBe(value);
  });

  it("finds codes and symbols before or after the number", () => {
    expect(
      findAmounts("Pay €10, then 10,000 EUR, USD 5 and $1,500.00 or CA$20 and 3 £").map(({ currency, value }) => [
        currency,
        value,
      ]),
    ).toEqual([
      ["EUR", 10],
      ["EUR", 10_000],
      ["USD", 5],
      ["USD", 1500],
      ["CAD", 20],
      ["GBP", 3],
    ]);
  });

  it("ignores numbers without a currency", () => {
    expect(findAmounts("Seat 14C, 3 bags, flight 400")).toEqual([]);
  });
});

describe("accounts", () => {
  it("finds IBANs, masked numbers and labelled account numbers, not dates or order numbers", () => {
    expect(findAccounts("IBAN DE89 3704 0044 0532 0130 00")).toEqual([
      { full: "DE89370400440532013000", last4: "3000" },
    ]);
    expect(findAccounts("Visa •••• 4242 or card ending in 1881")).toEqual([{ last4: "4242" }, { last4: "1881" }]);
    expect(findAccounts("to account 12345678")).toEqual([{ full: "12345678", last4: "5678" }]);
    expect(findAccounts("87654321", "Account number")).toEqual([{ full: "87654321", last4: "4321" }]);
    expect(findAccounts("Order 20261120 placed on 2026-11-20")).toEqual([]);
  });
});
