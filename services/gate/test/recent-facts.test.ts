import { describe, expect, it } from "vitest";
import { RecentFacts } from "../src/recent-facts.ts";

describe("recent facts", () => {
  it("always keeps the latest `max` entries, and forgets older ones a generation later", () => {
    const facts = new RecentFacts<number>(3);
    for (let i = 1; i <= 7; i++) facts.remember(`k${i}`, i);
    // Generations: [1,2,3] dropped, [4,5,6] previous, [7] current.
    expect([1, 2, 3].map((i) => facts.get(`k${i}`))).toEqual([undefined, undefined, undefined]);
    expect([4, 5, 6, 7].map((i) => facts.get(`k${i}`))).toEqual([4, 5, 6, 7]);
  });

  it("answers the latest value remembered for a key", () => {
    const facts = new RecentFacts<string>(2);
    facts.remember("a", "first");
    facts.remember("b", "other");
    facts.remember("a", "second");
    expect(facts.get("a")).toBe("second");
  });
});
