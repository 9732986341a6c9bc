import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { limits } from "../src/trust-layer/limits.ts";
import { screenLocally } from "../src/trust-layer/screen.ts";
import { benignCards } from "./support/benign-cards.ts";
import { card, columns, container, facts, proposal, requestId, table, text } from "./support/proposals.ts";

/** Any string at all: every code point, lone surrogates included. */
const anyText = fc.oneof(
  fc.string({ unit: "binary", maxLength: 60 }),
  fc.string({ unit: fc.integer({ min: 0, max: 0xffff }).map((unit) => String.fromCharCode(unit)), maxLength: 40 }),
  fc.constantFrom(
    "Pay 10 EUR",
    "Total: 10,000 EUR",
    "Verified by",
    "[a](https://b.example)",
    "PаyPаl",
    `\${x}`,
    " ",
    "",
  ),
);

const element: fc.Arbitrary<unknown> = fc.letrec<{ element: unknown }>((tie) => ({
  element: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    anyText.map((value) => text(value)),
    fc.array(fc.tuple(anyText, anyText), { minLength: 1, maxLength: 4 }).map((pairs) => facts(...pairs)),
    fc.array(tie("element"), { maxLength: 3 }).map((items) => container(...items)),
    fc
      .array(fc.array(tie("element"), { maxLength: 2 }), { minLength: 1, maxLength: 3 })
      .map((cols) => columns(...cols)),
    fc
      .array(fc.array(fc.array(tie("element"), { maxLength: 2 }), { minLength: 1, maxLength: 3 }), {
        minLength: 1,
        maxLength: 3,
      })
      .map((rows) => table(...rows)),
    fc.constantFrom({ type: "Image", url: "asset:icon/payment" }, { type: "Image", url: "https://x.example/a.png" }),
  ),
})).element;

const cardBody = fc.record({
  title: fc.oneof(anyText, fc.constantFrom("Pay 10 EUR to Acme", "Merge pull request #9")),
  body: fc.array(element, { maxLength: 5 }),
});

/** The body an accepted canonical card stands for: what the person saw, as an inquire body again. */
function bodyOf(canonicalCard: string) {
  const { adaptive_card_payload, ...action } = JSON.parse(canonicalCard);
  return { request_id: requestId, action, ...(adaptive_card_payload === undefined ? {} : { adaptive_card_payload }) };
}

/** The same JSON with every object's keys in another order. */
function reorder(value: unknown, seed: number): unknown {
  if (Array.isArray(value)) return value.map((item) => reorder(item, seed));
  if (typeof value !== "object" || value === null) return value;
  const entries = Object.entries(value).map(([key, member]) => [key, reorder(member, seed)] as const);
  entries.sort(
    ([a], [b]) =>
      ((a.length * 31 + seed) % 7) - ((b.length * 31 + seed) % 7) || (seed % 2 === 0 ? 1 : -1) * a.localeCompare(b),
  );
  return Object.fromEntries(entries);
}

describe("screening properties", () => {
  it("never throws on arbitrary JSON, as the body or as the card", () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        expect(["accepted", "rejected"]).toContain(screenLocally(value).kind);
        expect(["accepted", "rejected"]).toContain(screenLocally({ ...proposal(), adaptive_card_payload: value }).kind);
        expect(["accepted", "rejected"]).toContain(screenLocally({ ...proposal(), action: value }).kind);
      }),
      { numRuns: 300 },
    );
  });

  it("never throws on arbitrary Unicode in every text, and every violation is well formed", () => {
    fc.assert(
      fc.property(cardBody, anyText, ({ title, body }, category) => {
        const result = screenLocally(proposal(body, { summary_title: title, category }));
        const violations = result.kind === "rejected" ? result.violations : result.warnings;
        for (const violation of violations) {
          expect([...violation.value].length).toBeLessThanOrEqual(120);
          expect(violation.path === "" || violation.path.startsWith("/")).toBe(true);
        }
      }),
      { numRuns: 300 },
    );
  });

  it("accepted output always screens clean again, with the same canonical card and digest", () => {
    const accepted = (body: unknown) => {
      const first = screenLocally(body);
      if (first.kind !== "accepted") return;
      const again = screenLocally(bodyOf(first.canonicalCard));
      expect(again).toEqual(first);
    };
    for (const { body } of benignCards) accepted(body);
    fc.assert(
      fc.property(cardBody, ({ title, body }) => accepted(proposal(body, { summary_title: title }))),
      { numRuns: 300 },
    );
  });

  it("the digest does not depend on the order of keys", () => {
    fc.assert(
      fc.property(fc.constantFrom(...benignCards), fc.integer({ min: 0, max: 1000 }), ({ body }, seed) => {
        const first = screenLocally(body);
        const reordered = screenLocally(reorder(body, seed));
        expect(first.kind).toBe("accepted");
        if (first.kind === "accepted" && reordered.kind === "accepted")
          expect(reordered.cardDigest).toBe(first.cardDigest);
      }),
      { numRuns: 100 },
    );
  });

  describe("stays within its bounds on a 1 MB input", () => {
    const megabyte = 1024 * 1024;
    const inputs: [string, unknown][] = [
      ["one long text", card([text("a".repeat(megabyte))])],
      ["many elements", card(Array.from({ length: megabyte / 40 }, (_, index) => text(`Line ${index}`)))],
      [
        "a wide object",
        Object.fromEntries(Array.from({ length: megabyte / 16 }, (_, index) => [`key${index}`, index])),
      ],
      ["a long array", Array.from({ length: megabyte / 2 }, () => 0)],
      ["deep nesting", JSON.parse(`${'{"type":"Container","items":['.repeat(20_000)}${"]}".repeat(20_000)}`)],
    ];
    it.each(inputs)("%s: one card_too_large, no walk", (_, payload) => {
      const result = screenLocally({ ...proposal(), adaptive_card_payload: payload });
      expect(result.kind).toBe("rejected");
      if (result.kind !== "rejected") return;
      expect(result.violations.map((violation) => `${violation.type} ${violation.path}`)).toEqual([
        "card_too_large /adaptive_card_payload",
      ]);
    });

    it("a cyclic structure (not JSON, but possible from a caller) is too large, not endless", () => {
      const cyclic: Record<string, unknown> = { type: "AdaptiveCard", version: "1.5" };
      cyclic.body = [cyclic];
      const result = screenLocally({ ...proposal(), adaptive_card_payload: cyclic });
      expect(result.kind === "rejected" && result.violations[0]?.type).toBe("card_too_large");
    });

    it("a title of 1 MB is refused by length, not scanned", () => {
      const result = screenLocally(proposal(undefined, { summary_title: "\u202E".repeat(megabyte) }));
      expect(result.kind === "rejected" && result.violations.map((violation) => violation.type)).toEqual([
        "field_invalid",
      ]);
    });

    it("nesting under the size limit ends at the depth limit", () => {
      const nested = JSON.parse(`${'{"type":"Container","items":['.repeat(200)}${"]}".repeat(200)}`);
      const result = screenLocally({ ...proposal(), adaptive_card_payload: card([nested]) });
      expect(result.kind === "rejected" && result.violations.map((violation) => violation.type)).toEqual([
        "depth_exceeded",
      ]);
      expect(limits.maxDepth).toBe(8);
    });
  });
});
