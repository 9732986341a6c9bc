import { randomBase62, randomHex } from "@svc/platform";
import { describe, expect, it } from "vitest";

describe("random ids", () => {
  it("randomHex gives the asked number of bytes as hex, never the same bytes twice across refills of the pool", () => {
    // 2,000 ids of 16 bytes cross the 4 KiB pool's refill several times.
    const ids = Array.from({ length: 2000 }, () => randomHex(16));
    for (const id of ids) expect(id).toMatch(/^[0-9a-f]{32}$/);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it("randomBase62 gives the asked length from the 62-character alphabet, every character in use", () => {
    const texts = Array.from({ length: 500 }, () => randomBase62(32));
    for (const text of texts) expect(text).toMatch(/^[A-Za-z0-9]{32}$/);
    expect(new Set(texts).size).toBe(texts.length);
    expect(new Set(texts.join("")).size).toBe(62);
  });

  it("refuses to hand out more than one pool of bytes at once rather than repeat any", () => {
    expect(() => randomHex(4097)).toThrow(RangeError);
  });
});
