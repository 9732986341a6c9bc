/**
 * Trust-layer screening of a 28 KB card of realistic content, against a plain JSON.parse of the same bytes.
 * Prints one JSON line: {"name":"trust-layer-screening","p99_ms":…,"ratio":…,…}; `ratio` is screening's
 * throughput over JSON.parse's (goal: at least 0.1), `p99_ms` one screening's 99th percentile (goal: at most 2).
 * Run: node services/agentlink/bench/trust-layer.bench.ts [seconds per round, default 0.25; 12 rounds of each]
 */
import { limits } from "../src/trust-layer/limits.ts";
import { screenLocally } from "../src/trust-layer/screen.ts";

const cell = (text: string, extra: Record<string, unknown> = {}) => ({
  type: "TableCell",
  items: [{ type: "TextBlock", text, wrap: true, ...extra }],
});
const items = [
  ["Ergonomic office chair, graphite", "4", "1,196.00 EUR"],
  ["Height-adjustable desk 160×80", "2", "1,398.00 EUR"],
  ["Monitor arm, dual", "4", "356.00 EUR"],
  ["Noise-cancelling headset", "6", "894.00 EUR"],
  ["USB-C dock with Ethernet", "6", "466.00 EUR"],
];
/** Delivery and assembly notes, as a supplier writes them: German place names, Latin-1 throughout. */
const notes = [
  "the supplier ships from its warehouse in Düsseldorf to the Berlin office (Friedrichstraße 68, 3rd floor).",
  "Reception opens 08:30–17:00; the driver calls facilities 30 minutes ahead and uses the goods lift.",
  "Große Teile kommen auf Paletten; assembly is included for chairs and desks, packaging is taken back.",
  "Any damaged item is replaced within five working days under the framework agreement FA-2026-114.",
  "Invoices go to accounts payable with the order number; partial deliveries are invoiced separately.",
];
const paragraph = (index: number) =>
  `Delivery ${index + 1}: ${[0, 2, 4].map((offset) => notes[(index + offset) % notes.length]).join(" ")}`;
/** The stress variant: every paragraph also names people in Greek and Cyrillic and ends in an emoji. */
const multiscriptParagraph = (index: number) => `${paragraph(index)} Contacts: Σοφία Παπαδοπούλου, Иван Петров 🚚.`;

function buildCard(paragraphs: number, note: (index: number) => string) {
  return {
    request_id: "6f1c2a4e-8b1d-4c3e-9f2a-1b2c3d4e5f60",
    opaque_id: "binding-4f2a",
    action: {
      summary_title: "Order office furniture for 4,310.00 EUR from Acme Büro GmbH",
      category: "purchase",
      summary_detail: { label: "IBAN", value: "DE89 3704 0044 0532 0130 00" },
    },
    adaptive_card_payload: {
      type: "AdaptiveCard",
      version: "1.5",
      body: [
        { type: "TextBlock", text: "Purchase order PO-2026-0117", size: "Medium", weight: "Bolder", style: "heading" },
        {
          type: "ColumnSet",
          columns: [
            {
              type: "Column",
              width: "auto",
              items: [{ type: "Image", url: "asset:icon/shopping-cart", size: "small" }],
            },
            {
              type: "Column",
              width: "stretch",
              items: [
                { type: "TextBlock", text: "Acme Büro GmbH, Königsallee 12, Düsseldorf", isSubtle: true, wrap: true },
              ],
            },
          ],
        },
        {
          type: "FactSet",
          facts: [
            ["Payee", "Acme Büro GmbH"],
            ["IBAN", "DE89 3704 0044 0532 0130 00"],
            ["Reference", "PO-2026-0117"],
            ["Cost center", "Operations 2210"],
            ["Requested by", "Dana Okafor"],
            ["Approved budget", "Q4 workplace refresh"],
            ["Delivery", "Week 49"],
            ["Total", "4,310.00 EUR"],
          ].map(([title, value]) => ({ title, value })),
        },
        {
          type: "Table",
          firstRowAsHeader: true,
          columns: [{ width: 3 }, { width: 1 }, { width: 2 }],
          rows: [
            { type: "TableRow", cells: [cell("Item", { weight: "Bolder" }), cell("Qty"), cell("Price")] },
            ...Array.from({ length: 12 }, (_, index) => {
              const [name = "", qty = "", price = ""] = items[index % items.length] ?? [];
              return { type: "TableRow", cells: [cell(`${name} (${index + 1})`), cell(qty), cell(price)] };
            }),
            { type: "TableRow", cells: [cell("Total", { weight: "Bolder" }), cell("—"), cell("4,310.00 EUR")] },
          ],
        },
        {
          type: "FactSet",
          facts: [
            ["Site contact", "Σοφία Παπαδοπούλου (facilities)"],
            ["Driver", "Иван Петров"],
            ["Delivery window", "Mon–Wed, 08:30–12:00 🚚"],
          ].map(([title, value]) => ({ title, value })),
        },
        ...Array.from({ length: paragraphs }, (_, index) => ({ type: "TextBlock", text: note(index), wrap: true })),
      ],
    },
  };
}

/** The largest card of this content under the size limit, as the bytes an inquire body arrives in. */
function largestCard(note: (index: number) => string) {
  let paragraphs = 1;
  const payloadBytes = (count: number) =>
    Buffer.byteLength(JSON.stringify(buildCard(count, note).adaptive_card_payload));
  while (payloadBytes(paragraphs + 1) <= limits.maxCardBytes) paragraphs++;
  const bytes = JSON.stringify(buildCard(paragraphs, note));
  const input = JSON.parse(bytes);
  const check = screenLocally(input);
  if (check.kind !== "accepted") throw new Error(`the benchmark card must pass: ${JSON.stringify(check)}`);
  return { bytes, input, paragraphs, cardBytes: payloadBytes(paragraphs) };
}

function opsPerSecond(work: () => unknown, seconds: number): number {
  const started = performance.now();
  const until = started + seconds * 1000;
  let count = 0;
  while (performance.now() < until) {
    for (let i = 0; i < 20; i++) work();
    count += 20;
  }
  return count / ((performance.now() - started) / 1000);
}

function latencies(input: unknown, samples: number): number[] {
  const measured: number[] = [];
  for (let i = 0; i < samples; i++) {
    const started = performance.now();
    screenLocally(input);
    measured.push(performance.now() - started);
  }
  return measured.sort((a, b) => a - b);
}
const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? 0;

/** Throughput of screening against JSON.parse of the same bytes, and one screening's latency. */
function measure(card: ReturnType<typeof largestCard>, seconds: number) {
  const parse = () => JSON.parse(card.bytes);
  const screen = () => screenLocally(card.input);
  opsPerSecond(parse, 0.3);
  opsPerSecond(screen, 0.3);
  // Alternating rounds, best of each, so a burst of noise on the shared machine does not decide the ratio.
  const best = { parse: 0, screen: 0 };
  for (let round = 0; round < 12; round++) {
    best.parse = Math.max(best.parse, opsPerSecond(parse, seconds));
    best.screen = Math.max(best.screen, opsPerSecond(screen, seconds));
  }
  const sorted = latencies(card.input, 5000);
  return { ...best, p50: percentile(sorted, 0.5), p99: percentile(sorted, 0.99), ratio: best.screen / best.parse };
}

const seconds = Number(process.argv[2] ?? 0.25);
const realistic = largestCard(paragraph);
const multiscript = largestCard(multiscriptParagraph);
const results = { realistic: measure(realistic, seconds), multiscript: measure(multiscript, seconds) };
for (const [name, card] of [
  ["realistic", realistic],
  ["multiscript", multiscript],
] as const) {
  const result = results[name];
  console.log(
    `${name} card: ${card.cardBytes} bytes of payload (${Buffer.byteLength(card.bytes)} of body), ` +
      `${card.paragraphs} notes`,
  );
  console.log(`  JSON.parse:    ${Math.round(result.parse)} ops/s`);
  console.log(
    `  screenLocally: ${Math.round(result.screen)} ops/s (ratio ${result.ratio.toFixed(3)}), ` +
      `p50 ${result.p50.toFixed(3)} ms, p99 ${result.p99.toFixed(3)} ms`,
  );
}
const { realistic: goal, multiscript: stress } = results;
console.log(
  JSON.stringify({
    name: "trust-layer-screening",
    card_bytes: realistic.cardBytes,
    parse_ops: Math.round(goal.parse),
    screen_ops: Math.round(goal.screen),
    p50_ms: Number(goal.p50.toFixed(3)),
    p99_ms: Number(goal.p99.toFixed(3)),
    ratio: Number(goal.ratio.toFixed(3)),
    multiscript_p99_ms: Number(stress.p99.toFixed(3)),
    multiscript_ratio: Number(stress.ratio.toFixed(3)),
  }),
);
