import { describe, expect, it } from "vitest";
import { newHandle } from "../src/links/handle.ts";

describe("handles", () => {
  it("have the spec's form OP_ and 12 base62 characters", () => {
    const handles = Array.from({ length: 2000 }, newHandle);
    for (const handle of handles) expect(handle).toMatch(/^OP_[A-Za-z0-9]{12}$/);
    expect(new Set(handles).size).toBe(handles.length);
  });

  it("use the whole base62 alphabet", () => {
    const seen = new Set(Array.from({ length: 2000 }, newHandle).flatMap((handle) => [...handle.slice(3)]));
    expect(seen.size).toBe(62);
  });
});
