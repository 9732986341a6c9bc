/**
 * Trust-layer screening of a 28 KB card of realistic content, against a plain JSON.parse of the same bytes.
 * Prints one JSON line: {"name":"trust-layer-screening","p99_ms":…,"ratio":…,…}; `ratio` is screening's
 * throughput over JSON.parse's (goal: at least 0.1), `p99_ms` one screening's 99th percentile (goal: at most 2).
 * Run: node services/agentlink/bench/trust-layer.bench.ts [seconds per round]
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
const paragraph = (index: number) =>
  `Delivery ${index + 1}: the supplier ships from its warehouse in Düsseldorf to the Berlin office (Friedrichstraße 68, ` +
  "3rd floor, reception opens 08:30–17:00). Große Teile kommen auf Paletten; the driver calls Σοφία Παπαδοπούλου or " +
  "Иван Петров from facilities 30 minutes ahead. Assembly is included for chairs and desks, packaging is taken back, " +
  "and any damaged item is replaced within five working days under the framework agreement FA-2026-114 🚚. ";

function buildCard(paragraphs: number) {
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
            { type: "Column", width: "auto", items: [{ type: "Image", url: "asset:icon/shopping-cart", size: "small" }] },
            {
              type: "Column",
              width: "stretch",
              items: [{ type: "TextBlock", text: "Acme Büro GmbH, Königsallee 12, Düsseldorf", isSubtle: true, wrap: true }],
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
        ...Array.from({ length: paragraphs }, (_, index) => ({ type: "TextBlock", text: paragraph(index), wrap: true })),
      ],
    },
  };
}

// The largest card of this content under the size limit.
let paragraphs = 1;
while (Buffer.byteLength(JSON.stringify(buildCard(paragraphs + 1).adaptive_card_payload)) <= limits.maxCardBytes) paragraphs++;
const bytes = JSON.stringify(buildCard(paragraphs));
const cardBytes = Buffer.byteLength(JSON.stringify(buildCard(paragraphs).adaptive_card_payload));
const input = JSON.parse(bytes);
const check = screenLocally(input);
if (check.kind !== "accepted") throw new Error(`the benchmark card must pass: ${JSON.stringify(check)}`);

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

function latencies(samples: number): number[] {
  const measured: number[] = [];
  for (let i = 0; i < samples; i++) {
    const started = performance.now();
    screenLocally(input);
    measured.push(performance.now() - started);
  }
  return measured.sort((a, b) => a - b);
}
const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? 0;

const seconds = Number(process.argv[2] ?? 1);
const parse = () => JSON.parse(bytes);
const screen = () => screenLocally(input);
opsPerSecond(parse, 0.3);
opsPerSecond(screen, 0.3);
// Alternating rounds, best of each, so a burst of noise on the shared machine does not decide the ratio.
const best = { parse: 0, screen: 0 };
for (let round = 0; round < 3; round++) {
  best.parse = Math.max(best.parse, opsPerSecond(parse, seconds));
  best.screen = Math.max(best.screen, opsPerSecond(screen, seconds));
}
const sorted = latencies(5000);
const p50 = percentile(sorted, 0.5);
const p99 = percentile(sorted, 0.99);

console.log(`card: ${cardBytes} bytes of payload (${Buffer.byteLength(bytes)} of body), ${paragraphs} paragraphs`);
console.log(`JSON.parse:      ${Math.round(best.parse)} ops/s`);
console.log(`screenLocally:   ${Math.round(best.screen)} ops/s, p50 ${p50.toFixed(3)} ms, p99 ${p99.toFixed(3)} ms`);
console.log(
  JSON.stringify({
    name: "trust-layer-screening",
    card_bytes: cardBytes,
    parse_ops: Math.round(best.parse),
    screen_ops: Math.round(best.screen),
    p50_ms: Number(p50.toFixed(3)),
    p99_ms: Number(p99.toFixed(3)),
    ratio: Number((best.screen / best.parse).toFixed(2)),
  }),
);
