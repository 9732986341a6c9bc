import { describe, expect, it } from "vitest";
import { reportValue } from "../src/trust-layer/violation.ts";

describe("reported values", () => {
  it("writes invisible characters as \\u{…}", () => {
    expect(reportValue("a\u200Bb\u202Ec\n")).toBe("a\\u{200B}b\\u{202E}c\\u{A}");
  });
  it("cuts to 120 characters, ending in …", () => {
    expect(reportValue("x".repeat(120))).toBe("x".repeat(120));
    expect(reportValue("x".repeat(121))).toBe(`${"x".repeat(119)}…`);
    expect([...reportValue("\u200B".repeat(100))].length).toBeLessThanOrEqual(120);
  });
  it("describes non-strings without serializing them", () => {
    expect(reportValue({ a: 1 })).toBe("{object}");
    expect(reportValue([1, 2])).toBe("[array of 2]");
    expect(reportValue(12)).toBe("12");
  });
});
