/**
 * Trust-layer screening of a 28 KB card of realistic content, against a plain JSON.parse of the same bytes.
 * Prints one JSON line: {"name":"trust-layer-screening","p99_ms":…,"ratio":…,…}.
 * `ratio` is screening's throughput per CPU second over JSON.parse's, that is JSON.parse's CPU per operation
 * over screening's, the median over interleaved rounds (which goes first swaps each round; goal: at least 0.1).
 * `p99_ms` is one screening's 99th percentile over 3,000 samples, each its wall time less the time this
 * thread waited for a CPU meanwhile (goal: at most 2); `p99_wall_ms` is the plain wall time's, beside it.
 * Run: node services/agentlink/bench/trust-layer.bench.ts [rounds, default 11]
 */
import { cpuPerOp, median } from "../../../gateway/sdk/bench/cpu.ts";
import { runQueueWait } from "../../../test/bench/run-queue-wait.ts";
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

const repeatedly = (work: () => unknown, iterations: number) => async () => {
  for (let i = 0; i < iterations; i++) work();
};

/**
 * One screening's time, `samples` times: the wall time less the time the thread waited, runnable, for a
 * CPU. The readings sit inside the timed span, so a wait is only ever taken off a span that holds it.
 */
function latencies(input: unknown, samples: number): { ran: number[]; wall: number[] } {
  const waited = runQueueWait();
  const ran: number[] = [];
  const wall: number[] = [];
  for (let i = 0; i < samples; i++) {
    const started = performance.now();
    const waitedBefore = waited.ms();
    screenLocally(input);
    const waitedAfter = waited.ms();
    const took = performance.now() - started;
    wall.push(took);
    ran.push(took - (waitedAfter - waitedBefore));
  }
  waited.close();
  return { ran: ran.sort((a, b) => a - b), wall: wall.sort((a, b) => a - b) };
}
const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? 0;

/**
 * Operations per round, the same for both arms. Each round begins with a full collection, which frees the
 * maps of the objects the last round's screenings built and with them the optimized code that relied on them:
 * the next 50 or so screenings run at up to twice their cost while V8 optimizes again. At 300 a round that
 * re-warming was a fifth of the figure (a collection every 0.1 s of screening, where a running service meets one
 * every few seconds); at 1,500 it is a small part, and the figure matches the screenings' mean wall time.
 */
const parsesPerRound = 1500;
const screeningsPerRound = 1500;
const latencySamples = 3000;

/** CPU per operation of screening and of JSON.parse in interleaved rounds, and one screening's latency. */
async function measure(card: ReturnType<typeof largestCard>, rounds: number) {
  const parse = repeatedly(() => JSON.parse(card.bytes), parsesPerRound);
  const screen = repeatedly(() => screenLocally(card.input), screeningsPerRound);
  await cpuPerOp(parse, parsesPerRound);
  await cpuPerOp(screen, screeningsPerRound);
  const spent = { parse: [] as number[], screen: [] as number[] };
  const ratios: number[] = [];
  for (let round = 0; round < rounds; round++) {
    const arms = [
      async () => spent.parse.push(await cpuPerOp(parse, parsesPerRound)),
      async () => spent.screen.push(await cpuPerOp(screen, screeningsPerRound)),
    ];
    for (const arm of round % 2 === 0 ? arms : arms.reverse()) await arm();
    ratios.push((spent.parse.at(-1) as number) / (spent.screen.at(-1) as number));
  }
  const { ran, wall } = latencies(card.input, latencySamples);
  return {
    parseCpuUs: median(spent.parse),
    screenCpuUs: median(spent.screen),
    ratio: median(ratios),
    p50: percentile(ran, 0.5),
    p99: percentile(ran, 0.99),
    p99Wall: percentile(wall, 0.99),
  };
}

const rounds = Number(process.argv[2] ?? 11);
const realistic = largestCard(paragraph);
const multiscript = largestCard(multiscriptParagraph);
const results = { realistic: await measure(realistic, rounds), multiscript: await measure(multiscript, rounds) };
for (const [name, card] of [
  ["realistic", realistic],
  ["multiscript", multiscript],
] as const) {
  const result = results[name];
  console.log(
    `${name} card: ${card.cardBytes} bytes of payload (${Buffer.byteLength(card.bytes)} of body), ` +
      `${card.paragraphs} notes`,
  );
  console.log(`  JSON.parse:    ${result.parseCpuUs.toFixed(1)} µs of CPU`);
  console.log(
    `  screenLocally: ${result.screenCpuUs.toFixed(1)} µs of CPU (ratio ${result.ratio.toFixed(3)}), ` +
      `p50 ${result.p50.toFixed(3)} ms, p99 ${result.p99.toFixed(3)} ms (wall ${result.p99Wall.toFixed(3)} ms)`,
  );
}
const { realistic: goal, multiscript: stress } = results;
console.log(
  JSON.stringify({
    name: "trust-layer-screening",
    card_bytes: realistic.cardBytes,
    rounds,
    parse_cpu_us: Number(goal.parseCpuUs.toFixed(1)),
    screen_cpu_us: Number(goal.screenCpuUs.toFixed(1)),
    p50_ms: Number(goal.p50.toFixed(3)),
    p99_ms: Number(goal.p99.toFixed(3)),
    p99_wall_ms: Number(goal.p99Wall.toFixed(3)),
    samples: latencySamples,
    ratio: Number(goal.ratio.toFixed(3)),
    multiscript_screen_cpu_us: Number(stress.screenCpuUs.toFixed(1)),
    multiscript_p99_ms: Number(stress.p99.toFixed(3)),
    multiscript_ratio: Number(stress.ratio.toFixed(3)),
  }),
);
