import { describe, expect, it } from "vitest";
import { limits } from "../src/trust-layer/limits.ts";
import { screenLocally } from "../src/trust-layer/screen.ts";
import {
  type Body,
  card,
  columns,
  container,
  facts,
  proposal,
  requestId,
  table,
  text,
  textTable,
} from "./support/proposals.ts";

const P = "/adaptive_card_payload";
type Case = { name: string; body: unknown; expect: [type: string, path: string][] };

const withPayload = (payload: unknown, action: Record<string, unknown> = {}): Body => ({
  ...proposal(undefined, action),
  adaptive_card_payload: payload,
});
const nest = (levels: number, leaf: unknown): unknown => (levels === 0 ? leaf : container(nest(levels - 1, leaf)));
const cellPath = (row: number, cell: number, item = 0) => `${P}/body/0/rows/${row}/cells/${cell}/items/${item}`;

const cases: Case[] = [
  // Structure
  { name: "not an object body", body: "hello", expect: [["body_invalid", ""]] },
  { name: "no action", body: { request_id: requestId }, expect: [["body_invalid", "/action"]] },
  {
    name: "missing title",
    body: proposal([], { summary_title: undefined }),
    expect: [["field_missing", "/action/summary_title"]],
  },
  {
    name: "title too long",
    body: proposal([], { summary_title: "x".repeat(121) }),
    expect: [["field_invalid", "/action/summary_title"]],
  },
  {
    name: "detail not an object",
    body: proposal([], { summary_detail: "10 EUR" }),
    expect: [["field_invalid", "/action/summary_detail"]],
  },
  {
    name: "trusted account not a uuid",
    body: proposal([], { trusted_account_id: "acct-1" }),
    expect: [["field_invalid", "/action/trusted_account_id"]],
  },
  { name: "payload is an array", body: withPayload([text("hi")]), expect: [["card_not_object", P]] },
  {
    name: "wrong card type",
    body: withPayload({ type: "MessageCard", version: "1.5", body: [] }),
    expect: [["card_type_invalid", `${P}/type`]],
  },
  {
    name: "version 1.6",
    body: withPayload(card([], { version: "1.6" })),
    expect: [["card_version_unsupported", `${P}/version`]],
  },
  {
    name: "version as a number",
    body: withPayload(card([], { version: 1.5 })),
    expect: [["card_version_unsupported", `${P}/version`]],
  },
  {
    name: "version 2.0",
    body: withPayload(card([], { version: "2.0" })),
    expect: [["card_version_unsupported", `${P}/version`]],
  },
  {
    name: "card actions",
    body: withPayload(card([text("Pay")], { actions: [{ type: "Action.OpenUrl", url: "https://x.test" }] })),
    expect: [["action_not_allowed", `${P}/actions`]],
  },
  {
    name: "selectAction on a Container",
    body: proposal([{ ...container(text("Tap me")), selectAction: { type: "Action.Submit" } }]),
    expect: [["action_not_allowed", `${P}/body/0/selectAction`]],
  },
  {
    name: "ActionSet element",
    body: proposal([{ type: "ActionSet", actions: [] }]),
    expect: [["element_not_allowed", `${P}/body/0/type`]],
  },
  {
    name: "Action.Execute as an element in a Column",
    body: proposal([columns([{ type: "Action.Execute" }])]),
    expect: [["action_not_allowed", `${P}/body/0/columns/0/items/0/type`]],
  },
  {
    name: "Input.Text",
    body: proposal([{ type: "Input.Text", id: "pin" }]),
    expect: [["element_not_allowed", `${P}/body/0/type`]],
  },
  {
    name: "Media",
    body: proposal([container({ type: "Media", sources: [] })]),
    expect: [["element_not_allowed", `${P}/body/0/items/0/type`]],
  },
  {
    name: "RichTextBlock in a table cell",
    body: proposal([table([[{ type: "RichTextBlock", inlines: [] }]])]),
    expect: [["element_not_allowed", `${cellPath(0, 0)}/type`]],
  },
  {
    name: "element without type",
    body: proposal([{ text: "hi" }]),
    expect: [["element_type_missing", `${P}/body/0/type`]],
  },
  { name: "element that is a string", body: proposal(["hi"]), expect: [["element_invalid", `${P}/body/0`]] },
  {
    name: "a Column directly in the body",
    body: proposal([{ type: "Column", items: [] }]),
    expect: [["element_not_allowed", `${P}/body/0/type`]],
  },
  {
    name: "a TextBlock where a TableRow belongs",
    body: proposal([{ type: "Table", rows: [text("x")] }]),
    expect: [["element_not_allowed", `${P}/body/0/rows/0/type`]],
  },
  {
    name: "backgroundImage on the card",
    body: withPayload(card([text("x")], { backgroundImage: "asset:icon/bank" })),
    expect: [["background_image_not_allowed", `${P}/backgroundImage`]],
  },
  {
    name: "backgroundImage on a Column",
    body: proposal([
      { type: "ColumnSet", columns: [{ type: "Column", items: [], backgroundImage: { url: "asset:icon/bank" } }] },
    ]),
    expect: [["background_image_not_allowed", `${P}/body/0/columns/0/backgroundImage`]],
  },
  {
    name: "$data templating",
    body: withPayload(card([text(`\${amount}`)], { $data: { amount: "10 EUR" } })),
    expect: [
      ["templating_not_allowed", `${P}/$data`],
      ["templating_not_allowed", `${P}/body/0/text`],
    ],
  },
  {
    name: "$when on an element",
    body: proposal([{ ...text("Paid"), $when: `\${paid}` }]),
    expect: [["templating_not_allowed", `${P}/body/0/$when`]],
  },
  {
    name: "template expression in a fact title",
    body: proposal([facts([`\${label}`, "x"])]),
    expect: [["templating_not_allowed", `${P}/body/0/facts/0/title`]],
  },
  {
    name: "fallback element",
    body: proposal([{ ...text("Amount: 10 EUR"), fallback: text("Amount: 10,000 EUR") }]),
    expect: [["fallback_not_allowed", `${P}/body/0/fallback`]],
  },
  {
    name: "requires",
    body: proposal([{ ...text("x"), requires: { adaptiveCards: "1.6" } }]),
    expect: [["fallback_not_allowed", `${P}/body/0/requires`]],
  },
  {
    name: "fallbackText on the card",
    body: withPayload(card([], { fallbackText: "Approve to cancel" })),
    expect: [["fallback_not_allowed", `${P}/fallbackText`]],
  },
  {
    name: "unknown property on a TextBlock",
    body: proposal([text("x", { fontFamily: "Comic Sans" })]),
    expect: [["unknown_property", `${P}/body/0/fontFamily`]],
  },
  {
    name: "unknown property on a fact",
    body: proposal([{ type: "FactSet", facts: [{ title: "a", value: "b", speak: "c" }] }]),
    expect: [["unknown_property", `${P}/body/0/facts/0/speak`]],
  },
  {
    name: "rtl flag on the card",
    body: withPayload(card([text("x")], { rtl: true })),
    expect: [["unknown_property", `${P}/rtl`]],
  },
  {
    name: "TextBlock without text",
    body: proposal([{ type: "TextBlock", wrap: true }]),
    expect: [["missing_property", `${P}/body/0/text`]],
  },
  {
    name: "unknown size value",
    body: proposal([text("x", { size: "tiny" })]),
    expect: [["invalid_property_value", `${P}/body/0/size`]],
  },
  {
    name: "text as a number",
    body: proposal([{ type: "TextBlock", text: 10000 }]),
    expect: [["invalid_property_value", `${P}/body/0/text`]],
  },
  {
    name: "minHeight pushing content away",
    body: proposal([{ ...container(text("x")), minHeight: "9000px" }]),
    expect: [["invalid_property_value", `${P}/body/0/minHeight`]],
  },
  {
    name: "image from https",
    body: proposal([{ type: "Image", url: "https://cdn.example/logo.png" }]),
    expect: [["image_url_not_allowed", `${P}/body/0/url`]],
  },
  {
    name: "image as a data: URL in a table cell",
    body: proposal([table([[{ type: "Image", url: "data:image/png;base64,iVBORw0KGgo=" }]])]),
    expect: [["image_url_not_allowed", `${cellPath(0, 0)}/url`]],
  },
  {
    name: "image with a relative URL",
    body: proposal([{ type: "Image", url: "/static/check.png" }]),
    expect: [["image_url_not_allowed", `${P}/body/0/url`]],
  },
  {
    name: "image naming an asset that is not bundled",
    body: proposal([{ type: "Image", url: "asset:icon/green-shield-verified" }]),
    expect: [["image_not_bundled", `${P}/body/0/url`]],
  },
  // Limits
  { name: "card over 28 KB", body: proposal([text("a".repeat(limits.maxCardBytes))]), expect: [["card_too_large", P]] },
  {
    name: "nesting deeper than 8",
    body: proposal([nest(8, text("deep"))]),
    expect: [["depth_exceeded", `${P}/body/0${"/items/0".repeat(8)}`]],
  },
  {
    name: "more than 200 elements",
    body: proposal(Array.from({ length: 201 }, (_, index) => text(`Line ${index}`))),
    expect: [["too_many_elements", `${P}/body/200`]],
  },
  {
    name: "text over 2,000 characters",
    body: proposal([text("word ".repeat(401))]),
    expect: [["text_too_long", `${P}/body/0/text`]],
  },
  {
    name: "31 facts",
    body: proposal([facts(...Array.from({ length: 31 }, (_, index): [string, string] => [`f${index}`, "v"]))]),
    expect: [["too_many_facts", `${P}/body/0/facts`]],
  },
  {
    name: "51 table rows",
    body: proposal([textTable(...Array.from({ length: 51 }, (_, index) => [`row ${index}`]))]),
    expect: [["table_too_large", `${P}/body/0/rows`]],
  },
  {
    name: "11 cells in a row",
    body: proposal([textTable(Array.from({ length: 11 }, (_, index) => `c${index}`))]),
    expect: [
      ["table_too_large", `${P}/body/0/rows/0/cells`],
      ["table_too_large", `${P}/body/0/columns`],
    ],
  },
  // Characters and appearance
  {
    name: "bidi override in the title",
    body: proposal([], { summary_title: "Refund invoice \u202Efdp.exe" }),
    expect: [["bidi_control", "/action/summary_title"]],
  },
  {
    name: "bidi isolate in a table cell",
    body: proposal([textTable(["Amount", "\u2067100\u2069 EUR"])]),
    expect: [["bidi_control", `${cellPath(0, 1)}/text`]],
  },
  {
    name: "zero-width space in the category",
    body: proposal([], { category: "pay\u200Bment" }),
    expect: [["invisible_character", "/action/category"]],
  },
  {
    name: "tag characters smuggling an instruction",
    body: proposal([text("Total 10 EUR\u{E0041}\u{E0070}\u{E0070}\u{E0072}")]),
    expect: [["invisible_character", `${P}/body/0/text`]],
  },
  {
    name: "Hangul filler in a fact value",
    body: proposal([facts(["Payee", "\u3164Acme"])]),
    expect: [["invisible_character", `${P}/body/0/facts/0/value`]],
  },
  {
    name: "control character in a Column",
    body: proposal([columns([text("Pay\u0007 now")])]),
    expect: [["control_character", `${P}/body/0/columns/0/items/0/text`]],
  },
  {
    name: "line break in the title",
    body: proposal([], { summary_title: "Pay 10 EUR\nand 5,000 EUR more" }),
    expect: [["control_character", "/action/summary_title"]],
  },
  {
    name: "unassigned code point",
    body: proposal([text("Pay \u{E0FFF}")]),
    expect: [["unassigned_character", `${P}/body/0/text`]],
  },
  {
    name: "lone surrogate in the detail",
    body: proposal([], { summary_detail: { label: "Payee", value: "Acme \uD800" } }),
    expect: [["unassigned_character", "/action/summary_detail/value"]],
  },
  {
    name: "private use character",
    body: proposal([text("Status: \uE000")]),
    expect: [["private_use_character", `${P}/body/0/text`]],
  },
  {
    name: "stacked combining marks",
    body: proposal([text("Cance\u0301\u0302\u0303\u0304\u0305l")]),
    expect: [["combining_mark_stack", `${P}/body/0/text`]],
  },
  {
    name: "Cyrillic letters inside a Latin word",
    body: proposal([text("Pay to PаyPаl")]),
    expect: [["mixed_script", `${P}/body/0/text`]],
  },
  {
    name: "Greek omicron in a fact title",
    body: proposal([facts(["Acc\u03BFunt", "Main"])]),
    expect: [["mixed_script", `${P}/body/0/facts/0/title`]],
  },
  {
    name: "Cyrillic O among digits",
    body: proposal([text("Amount: 1\u041E0 EUR")]),
    expect: [["mixed_script", `${P}/body/0/text`]],
  },
  {
    name: "isVisible false",
    body: proposal([text("Also transfers 9,000 EUR", { isVisible: false })]),
    expect: [["hidden_content", `${P}/body/0/isVisible`]],
  },
  {
    name: "hidden column",
    body: proposal([{ type: "ColumnSet", columns: [{ type: "Column", items: [text("x")], isVisible: false }] }]),
    expect: [["hidden_content", `${P}/body/0/columns/0/isVisible`]],
  },
  { name: "whitespace-only text", body: proposal([text("   \n  ")]), expect: [["blank_text", `${P}/body/0/text`]] },
  {
    name: "empty text in a table cell",
    body: proposal([textTable(["Item", ""])]),
    expect: [["blank_text", `${cellPath(0, 1)}/text`]],
  },
  {
    name: "text of braille blanks",
    body: proposal([text("\u2800\u2800\u2800")]),
    expect: [["blank_text", `${P}/body/0/text`]],
  },
  {
    name: "blank lines pushing text down",
    body: proposal([text(`Pay 10 EUR${"\n".repeat(30)}and sign the loan`)]),
    expect: [["whitespace_padding", `${P}/body/0/text`]],
  },
  // Links
  {
    name: "markdown link hiding its target",
    body: proposal([text("Review [your invoice](https://evil.example/pay)")]),
    expect: [["link_hides_target", `${P}/body/0/text`]],
  },
  {
    name: "link text that looks like another address",
    body: proposal([facts(["Pay at", "[https://bank.example](https://bank-example.test)"])]),
    expect: [["link_hides_target", `${P}/body/0/facts/0/value`]],
  },
  {
    name: "javascript link",
    body: proposal([text("[javascript:void(0)](javascript:void(0))")]),
    expect: [["link_hides_target", `${P}/body/0/text`]],
  },
  {
    name: "reference-style link",
    body: proposal([text("See [the terms][1]\n[1]: https://evil.example")]),
    expect: [["link_hides_target", `${P}/body/0/text`]],
  },
  {
    name: "markdown link showing its target",
    body: proposal([text("Details: [https://acme.example/po/7](https://acme.example/po/7)")]),
    expect: [["markdown_link", `${P}/body/0/text`]],
  },
  {
    name: "URL in the title",
    body: proposal([], { summary_title: "Log in at https://secure-login.example" }),
    expect: [["url_in_text", "/action/summary_title"]],
  },
  {
    name: "domain in a fact title",
    body: proposal([facts(["paypal.com", "Recipient"])]),
    expect: [["domain_in_text", `${P}/body/0/facts/0/title`]],
  },
  // Honesty
  {
    name: "verified by",
    body: proposal([text("Verified by Agents Ask")]),
    expect: [["impersonation", `${P}/body/0/text`]],
  },
  {
    name: "security check passed in a deep table cell",
    body: proposal([container(table([[text("Status")], [container(text("Security check passed"))]]))]),
    expect: [["impersonation", `${P}/body/0/items/0/rows/0/cells/1/items/0/items/0/text`]],
  },
  {
    name: "tap approve to cancel in the title",
    body: proposal([], { summary_title: "Tap Approve to cancel your subscription" }),
    expect: [["impersonation", "/action/summary_title"]],
  },
  {
    name: "this action is safe in a fact value",
    body: proposal([facts(["Note", "This action is safe"])]),
    expect: [["impersonation", `${P}/body/0/facts/0/value`]],
  },
  {
    name: "10 EUR title over a 10,000 EUR fact",
    body: proposal([facts(["Amount", "10,000 EUR"])], { summary_title: "Pay 10 EUR to Acme" }),
    expect: [["amount_mismatch", `${P}/body/0/facts/0/value`]],
  },
  {
    name: "a total that differs from the title",
    body: proposal([facts(["Total", "€9.00"])], { summary_title: "Pay €10.00 to Acme" }),
    expect: [["amount_mismatch", `${P}/body/0/facts/0/value`]],
  },
  {
    name: "a larger amount in a Column",
    body: proposal([columns([text("Charge")], [text("$1,500.00")])], { summary_title: "Charge $15.00" }),
    expect: [["amount_mismatch", `${P}/body/0/columns/1/items/0/text`]],
  },
  {
    name: "a total row in a line-item table",
    body: proposal([textTable(["Desk", "100 EUR"], ["Total", "1.000,00 EUR"])], {
      summary_title: "Buy office furniture for 100 EUR",
    }),
    expect: [["amount_mismatch", `${cellPath(1, 1)}/text`]],
  },
  {
    name: "amount in the detail contradicted",
    body: proposal([text("Transfer of GBP 5,000")], { summary_detail: { label: "Amount", value: "GBP 50" } }),
    expect: [["amount_mismatch", `${P}/body/0/text`]],
  },
  {
    name: "another currency only",
    body: proposal([facts(["Amount", "10 USD"])], { summary_title: "Pay 10 EUR to Acme" }),
    expect: [["currency_mismatch", `${P}/body/0/facts/0/value`]],
  },
  {
    name: "another IBAN",
    body: proposal([facts(["To", "GB29 NWBK 6016 1331 9268 19"])], {
      summary_title: "Transfer to DE89 3704 0044 0532 0130 00",
    }),
    expect: [["account_mismatch", `${P}/body/0/facts/0/value`]],
  },
  {
    name: "another card ending",
    body: proposal([text("Charged to card **** 9999")], { summary_detail: { label: "Card", value: "ending in 4242" } }),
    expect: [["account_mismatch", `${P}/body/0/text`]],
  },
  {
    name: "another account number in a fact",
    body: proposal([facts(["Account number", "98765432"])], { summary_title: "Pay rent to account 12345678" }),
    expect: [["account_mismatch", `${P}/body/0/facts/0/value`]],
  },
  // Combinations
  {
    name: "impersonation and a hidden link in a Column of a Container",
    body: proposal([container(columns([text("Security check passed: [open](https://evil.example)")]))]),
    expect: [
      ["impersonation", `${P}/body/0/items/0/columns/0/items/0/text`],
      ["link_hides_target", `${P}/body/0/items/0/columns/0/items/0/text`],
    ],
  },
  {
    name: "mixed script and zero-width in a table cell's fact title",
    body: proposal([table([[facts(["Р\u200Bayee", "Acme"])]])]),
    expect: [
      ["mixed_script", `${cellPath(0, 0)}/facts/0/title`],
      ["invisible_character", `${cellPath(0, 0)}/facts/0/title`],
    ],
  },
  {
    name: "an action inside a hidden table cell",
    body: proposal([
      {
        type: "Table",
        rows: [
          {
            type: "TableRow",
            cells: [{ type: "TableCell", items: [], isVisible: false, selectAction: { type: "Action.OpenUrl" } }],
          },
        ],
      },
    ]),
    expect: [
      ["hidden_content", `${P}/body/0/rows/0/cells/0/isVisible`],
      ["action_not_allowed", `${P}/body/0/rows/0/cells/0/selectAction`],
    ],
  },
  {
    name: "a key needing JSON Pointer escapes",
    body: proposal([text("x", { "a/b~c": 1 })]),
    expect: [["unknown_property", `${P}/body/0/a~1b~0c`]],
  },
];

describe("hostile cards", () => {
  it("the table holds at least 60 cards", () => {
    expect(cases.length).toBeGreaterThanOrEqual(60);
  });

  it.each(cases)("$name", ({ body, expect: expected }) => {
    const result = screenLocally(body);
    const found = result.kind === "rejected" ? result.violations : result.warnings;
    for (const [type, path] of expected) {
      expect(found.map((violation) => `${violation.type} ${violation.path}`)).toContain(`${type} ${path}`);
    }
    const severities = new Set(
      found
        .filter((violation) => expected.some(([type]) => type === violation.type))
        .map((violation) => violation.severity),
    );
    const warningsOnly = expected.every(([type]) =>
      ["markdown_link", "url_in_text", "domain_in_text", "whitespace_padding"].includes(type),
    );
    expect(result.kind).toBe(warningsOnly ? "accepted" : "rejected");
    expect(severities.has(warningsOnly ? "warning" : "error")).toBe(true);
  });

  it("a rejection reports every violation with its explanation and fix", () => {
    const result = screenLocally(proposal([text("Verified by \u202Eus")]));
    expect(result.kind).toBe("rejected");
    if (result.kind !== "rejected") return;
    for (const violation of result.violations) {
      expect(Object.keys(violation).sort()).toEqual([
        "explanation",
        "fix",
        "path",
        "severity",
        "source",
        "type",
        "value",
      ]);
      expect(violation.explanation).toMatch(/\.$/);
      expect(violation.fix).toMatch(/\.$/);
    }
    expect(result.violations.find((violation) => violation.type === "bidi_control")?.value).toBe(
      "Verified by \\u{202E}us",
    );
  });

  it("echoes at most the reported limit, errors first, and says how many more", () => {
    const body = proposal(Array.from({ length: 120 }, () => text("x", { a: 1, b: 2 })));
    const result = screenLocally(body);
    expect(result.kind).toBe("rejected");
    if (result.kind !== "rejected") return;
    expect(result.violations).toHaveLength(limits.maxReportedViolations);
    expect(result.violations.at(-1)).toMatchObject({ type: "violations_truncated", value: `${240 - 49} more` });
  });
});

describe("the size limit", () => {
  it("counts bytes, not characters: a card under the limit in characters but over it in UTF-8 is too large", () => {
    const body = proposal(Array.from({ length: 8 }, () => text("é".repeat(1800))));
    const result = screenLocally(body);
    expect(
      result.kind === "rejected" && result.violations.map((violation) => `${violation.type} ${violation.path}`),
    ).toEqual([`card_too_large ${P}`]);
  });

  it("a card of exactly the limit passes, one byte more does not", () => {
    const blocks = (bytes: number) => [
      ...Array.from({ length: 14 }, () => text("Line of text. ".repeat(140))),
      text(`${"é".repeat(Math.floor(bytes / 2))}${"x".repeat(bytes % 2)}`),
    ];
    const base = Buffer.byteLength(JSON.stringify(card(blocks(0))));
    const exact = proposal(blocks(limits.maxCardBytes - base));
    expect(Buffer.byteLength(JSON.stringify(exact.adaptive_card_payload))).toBe(limits.maxCardBytes);
    expect(screenLocally(exact).kind).toBe("accepted");
    const over = proposal(blocks(limits.maxCardBytes - base + 1));
    expect(screenLocally(over)).toMatchObject({ kind: "rejected", violations: [{ type: "card_too_large" }] });
  });
});
