import { describe, expect, it } from "vitest";
import { canonicalJson } from "../src/canonical-json.ts";
import { canonicalDigest } from "../src/card-digest.ts";

describe("RFC 8785 canonical JSON", () => {
  it("matches the RFC's example of values (section 3.2.2)", () => {
    const input = JSON.parse(
      '{"numbers":[333333333.33333329,1E30,4.50,2e-3,0.000000000000000000000000001],' +
        '"string":"\\u20ac$\\u000F\\u000aA\'\\u0042\\u0022\\u005c\\\\\\"\\/","literals":[null,true,false]}',
    );
    expect(canonicalJson(input)).toBe(
      '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],' +
        '"string":"€$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}',
    );
  });

  it("sorts keys by UTF-16 code units (section 3.2.3)", () => {
    const input = JSON.parse(
      '{"\\u20ac":"Euro Sign","\\r":"Carriage Return","\\ufb33":"Hebrew Letter Dalet With Dagesh","1":"One",' +
        '"\\ud83d\\ude00":"Emoji: Grinning Face","\\u0080":"Control","\\u00f6":"Latin Small Letter O With Diaeresis"}',
    );
    const canonical = canonicalJson(input);
    const order = ["Carriage Return", "One", "Control", "Latin Small", "Euro Sign", "Grinning Face", "Dalet"];
    const positions = order.map((value) => canonical.indexOf(value));
    expect(positions).toEqual([...positions].sort((a, b) => a - b));
    expect(positions.every((position) => position > 0)).toBe(true);
  });

  it("writes numbers as ECMAScript does, -0 as 0", () => {
    expect(canonicalJson([-0, 1e21, 1e-7, 0.1 + 0.2, 100])).toBe("[0,1e+21,1e-7,0.30000000000000004,100]");
  });

  it("refuses what JSON cannot hold", () => {
    expect(() => canonicalJson(Number.NaN)).toThrow(TypeError);
    expect(() => canonicalJson("\uD800")).toThrow(TypeError);
    expect(() => canonicalJson(undefined)).toThrow(TypeError);
  });

  it("digests as base64url SHA-256", () => {
    expect(canonicalDigest("{}")).toBe("RBNvo1WzZ4oRRq0W9-hknpT7T8If536DEMBg9hyq_4o");
  });
});
