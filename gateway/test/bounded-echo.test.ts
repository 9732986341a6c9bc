import { describe, expect, it } from "vitest";
import { boundedEcho, InputValidationError } from "../src/http/errors.ts";

/** Decision "Bounded echo of bad input": what a 400 sends back of what it received. */
describe("the bounded echo of a 400", () => {
  const body = (input: unknown, invalidValue: unknown = null) =>
    new InputValidationError(input, [{ propertyPath: "x", invalidValue, message: "x is wrong" }]).toBody();

  it("echoes small input unchanged", () => {
    const input = { gate: "checkout", ttl: 30, tags: ["a", "b"], nested: { ok: true } };
    expect(body(input, "checkout")).toEqual({
      code: "InputValidationError",
      message: "Input validation failed: x is wrong",
      input,
      errors: [{ propertyPath: "x", invalidValue: "checkout", message: "x is wrong" }],
    });
  });

  it("cuts strings over 256 characters, ending them in …, by code points", () => {
    expect(boundedEcho("a".repeat(256))).toBe("a".repeat(256));
    expect(boundedEcho("a".repeat(257))).toBe(`${"a".repeat(256)}…`);
    // 300 emoji: each is two UTF-16 units, and none is split.
    expect(boundedEcho("😀".repeat(300))).toBe(`${"😀".repeat(256)}…`);
  });

  it("cuts arrays to 20 items", () => {
    const items = Array.from({ length: 50 }, (_, i) => i);
    expect(boundedEcho(items)).toEqual(items.slice(0, 20));
  });

  it('replaces what is nested deeper than 5 levels with "…"', () => {
    const deep = { l1: { l2: { l3: { l4: { l5: { l6: 1 } }, leaf: "kept" } } } };
    // The input is the first level, l4's object the fifth: l5's object would be the sixth.
    expect(boundedEcho(deep)).toEqual({ l1: { l2: { l3: { l4: { l5: "…" }, leaf: "kept" } } } });
    expect(boundedEcho({ a: { b: { c: { d: { e: 1 } } } } })).toEqual({ a: { b: { c: { d: { e: 1 } } } } });
    expect(boundedEcho([[[[["x"]]]]])).toEqual([[[[["x"]]]]]);
    expect(boundedEcho([[[[[["x"]]]]]])).toEqual([[[[["…"]]]]]);
  });

  it("keeps the input an object, and sends {} with a message saying so when the cut input is over 2 KiB", () => {
    const many = Object.fromEntries(Array.from({ length: 200 }, (_, i) => [`field_${i}`, "v".repeat(100)]));
    const reply = body(many);
    expect(reply.input).toEqual({});
    expect(reply.message).toBe("Input validation failed: x is wrong (the input was too large to echo)");
    expect(Buffer.byteLength(JSON.stringify(reply))).toBeLessThan(4096);
  });

  it("echoes a 64 KiB string field cut to 256 characters", () => {
    const reply = body({ summary: "s".repeat(64 * 1024) }, "s".repeat(64 * 1024));
    expect(reply.input).toEqual({ summary: `${"s".repeat(256)}…` });
    expect(reply.errors[0]?.invalidValue).toBe(`${"s".repeat(256)}…`);
    expect(reply.message).toBe("Input validation failed: x is wrong");
  });

  it("cuts invalidValue the same way, emptied when still over 2 KiB", () => {
    expect(
      body(
        {},
        Array.from({ length: 30 }, () => "x".repeat(10)),
      ).errors[0]?.invalidValue,
    ).toEqual(Array.from({ length: 20 }, () => "x".repeat(10)));
    expect(
      body(
        {},
        Array.from({ length: 30 }, () => "x".repeat(300)),
      ).errors[0]?.invalidValue,
    ).toEqual([]);
    const wide = Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`k${i}`, "v".repeat(50)]));
    expect(body({}, wide).errors[0]?.invalidValue).toEqual({});
  });
});
