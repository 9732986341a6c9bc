import { describe, expect, it } from "vitest";
import { screenLocally } from "../src/trust-layer/screen.ts";
import { benignCards } from "./support/benign-cards.ts";

describe("benign cards", () => {
  it("at least 15 of them", () => {
    expect(benignCards.length).toBeGreaterThanOrEqual(15);
  });

  it.each(benignCards)("$name passes without an error", ({ body }) => {
    const result = screenLocally(body);
    expect(result.kind === "rejected" ? result.violations : []).toEqual([]);
  });

  it("the calendar invite's organiser address is not a domain warning; nothing else warns either", () => {
    for (const { body } of benignCards) {
      const result = screenLocally(body);
      expect(result.kind === "accepted" ? result.warnings : []).toEqual([]);
    }
  });
});
