import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { BUNDLED_ASSETS } from "../src/trust-layer/bundled-assets.ts";
import { trustLayerError } from "../src/trust-layer/data-error.ts";
import { Findings } from "../src/trust-layer/findings.ts";
import { screenLocally } from "../src/trust-layer/screen.ts";
import { checkCharacters } from "../src/trust-layer/text-rules.ts";
import { violationTypes } from "../src/trust-layer/violation-types.ts";
import { proposal, text } from "./support/proposals.ts";

const typesOf = (value: string, multiline = true) => {
  const findings = new Findings();
  checkCharacters({ path: "/x", text: `a${value}b`, multiline }, findings);
  return findings.list.map((violation) => violation.type);
};

describe("character rules", () => {
  it("every BMP control, format, unassigned, private-use or surrogate code unit is reported", () => {
    const missed: string[] = [];
    for (let unit = 0; unit < 0x10000; unit++) {
      const character = String.fromCharCode(unit);
      if (character === "\n" || !/[\p{Cc}\p{Cf}\p{Cn}\p{Co}\p{Cs}]/u.test(character)) continue;
      if (typesOf(character).length === 0) missed.push(unit.toString(16));
    }
    expect(missed).toEqual([]);
  });

  it("reports astral tag characters, unassigned planes and variation selectors", () => {
    expect(typesOf("\u{E0041}")).toContain("invisible_character");
    expect(typesOf("\u{E0100}")).toContain("invisible_character");
    expect(typesOf("\u{F0000}")).toContain("private_use_character");
    expect(typesOf("\u{3FFFF}")).toContain("unassigned_character");
  });

  it("allows emoji sequences, accents and line breaks in the card", () => {
    expect(typesOf("👨‍👩‍👧 ❤️ ✈︎ café naïve Ελληνικά Русский\n")).toEqual([]);
    expect(typesOf("\n", false)).toEqual(["control_character"]);
  });

  it("finds mixed-script words, not words of one script side by side", () => {
    expect(typesOf(" Pаypal ")).toEqual(["mixed_script"]);
    expect(typesOf(" ΑΡΡLE ")).toEqual(["mixed_script"]);
    expect(typesOf(" Иван Petrov ")).toEqual([]);
    expect(typesOf(" Pa\u0301\u0430l ")).toEqual(["mixed_script"]);
  });
});

describe("data.error", () => {
  it("a rejection is 422 trust_layer_rejected with the violations echoed", () => {
    const result = screenLocally(proposal([text("Verified by Agents Ask")]));
    if (result.kind !== "rejected") throw new Error("expected a rejection");
    expect(trustLayerError(result)).toEqual({
      statusCode: 422,
      code: "trust_layer_rejected",
      message: "The card was rejected by the trust layer (1 error).",
      retryable: false,
      next_step: "Fix the violations and send the inquire again; nothing was stored.",
      violations: result.violations,
    });
  });

  it("an unavailable layer is 502 trust_layer_unavailable, retryable, with the next step", () => {
    expect(trustLayerError({ kind: "unavailable", retryable: true, nextStep: "Retry.", reason: "timeout" })).toEqual({
      statusCode: 502,
      code: "trust_layer_unavailable",
      message: "The trust layer could not screen the card.",
      retryable: true,
      next_step: "Retry.",
    });
  });
});

describe("the README", () => {
  it("lists every violation type with its source and severity", () => {
    const readme = readFileSync(new URL("../README.md", import.meta.url), "utf8");
    for (const [type, entry] of Object.entries(violationTypes)) {
      expect(readme).toContain(`| \`${type}\` | ${entry.source} | ${entry.severity} |`);
    }
  });

  it("lists the bundled assets, all of them and no other", () => {
    const readme = readFileSync(new URL("../README.md", import.meta.url), "utf8");
    expect(new Set(readme.match(/asset:[a-z]+\/[a-z-]+/g))).toEqual(BUNDLED_ASSETS);
  });
});
