import { spawnSync } from "node:child_process";
import { globSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { checkoutAt } from "./baseline-checkout.ts";

/**
 * Runs every benchmark script of the repository one after another (they share two cores, so never in
 * parallel) and prints each goal's measured ratio. Benchmarks report; they never fail the test suite.
 */
const root = fileURLToPath(new URL("../../", import.meta.url));
/** Each benchmark's goals: a field of its result line, at least or at most a bound. */
type Goal = { field: string; atLeast?: number; atMost?: number; says: string };
const goals: Record<string, Goal[]> = {
  "age-presentation": [
    {
      field: "ratio",
      atMost: 3,
      says: "CPU of verifying an SD-JWT VC presentation with its KB-JWT at most 3x two raw crypto.subtle.verify (P-256) (median of interleaved rounds)",
    },
  ],
  "sign-attestation": [
    {
      field: "ratio",
      atLeast: 1.5,
      says: "jose SignJWT's CPU per signature at least 1.5x ours (same key, median of interleaved rounds)",
    },
  ],
  "verify-token": [
    {
      field: "ratio",
      atMost: 1.5,
      says: "server CPU (gateway, signing, PostgreSQL) per POST /v1/sdk/verify-token at most 1.5x one raw crypto.subtle.verify",
    },
  ],
  "sdk-call": [
    {
      field: "ratio",
      atMost: 1.05,
      says: "client CPU of a call through the SDK at most 1.05x a bare fetch of it (a gateway-like server in another process)",
    },
  ],
  "sdk-verify-attestation": [
    {
      field: "ratio",
      atMost: 1.3,
      says: "CPU of the SDK's verifyAttestation (warm key set) at most 1.3x one raw crypto.verify of the same token",
    },
  ],
  "webhook-delivery": [
    {
      field: "ratio",
      atLeast: 0.4,
      says: "deliveries/s at least 40% of min(bare node:http, single-row UPDATE), both 4 in flight (median of interleaved rounds)",
    },
  ],
  "webhook-restart-recovery": [
    {
      field: "n200_ready_to_delivered_ms",
      atMost: 3000,
      says: "200 claims of a dispatcher killed with SIGKILL all delivered within 3 s of the next one being ready (median of 3 rounds)",
    },
    {
      field: "n2000_ready_to_delivered_ms",
      atMost: 5000,
      says: "2000 such claims all delivered within 5 s of the next one being ready (median of 3 rounds)",
    },
  ],
  "create-verification-link": [
    {
      field: "ratio",
      atLeast: 0.4,
      says: "create-verification-link at least 40% of a single-row INSERT at 16 clients",
    },
    { field: "median_ratio", atMost: 4, says: "its median at one client at most 4x the INSERT's" },
    {
      field: "gateway_ratio",
      atLeast: 0.3,
      says: "create-verification-link through the gateway (HTTP, one RPC to gate) at least 30% of an INSERT at 16 clients",
    },
    {
      field: "gateway_median_ratio",
      atMost: 6,
      says: "its median through the gateway at one client at most 6x the INSERT's",
    },
    {
      field: "rounds_not_spent_exactly_once",
      atMost: 0,
      says: "a grant token under 16-way contention spent exactly once, every round",
    },
  ],
  "gateway-edge": [
    {
      field: "ratio",
      atLeast: 0.9,
      says: "gateway throughput with limiter and alias stage at least 90% of without, at whichever of 16 and 256 in flight the two carried more (each arm its own process, both sent at once; median of the rounds' ratios)",
    },
    {
      field: "cpu_ratio_at_16_in_flight",
      atMost: 1.15,
      says: "server CPU per request (the arm's gateway process and its PostgreSQL) at 16 in flight with limiter and alias stage at most 1.15x without (both sent at once; median of the rounds' ratios)",
    },
  ],
  "agents-inquire": [
    {
      field: "ratio",
      atLeast: 0.4,
      says: "inquire at least 40% of a single-row INSERT's throughput at 16 clients (median of interleaved rounds)",
    },
  ],
  "long-poll-wake": [
    {
      field: "ratio",
      atMost: 5,
      says: "from a card leaving queued to its held long-poll's answer: median at most 5x a bare JetStream publish-and-ack's (median of interleaved rounds' ratios of medians)",
    },
    { field: "p99_ratio", atMost: 10, says: "its p99 at most 10x the publish-and-ack's, over all kept samples" },
  ],
  "agents-quorum-resolution": [
    {
      field: "ratio",
      atMost: 1.5,
      says: "from a 3-approver card's deciding commit to the agent's long-poll answer: median at most 1.5x a single-approver card's (median of interleaved rounds' ratios of medians)",
    },
    { field: "p99_ratio", atMost: 3, says: "its p99 at most 3x the single-approver card's, over all kept samples" },
  ],
  "long-poll-hold": [
    {
      field: "rss_kib_per_held",
      atMost: 32,
      says: "one gateway's RSS per held long-poll at most 32 KiB (its growth over a first hold, before any verify run)",
    },
    {
      field: "ratio",
      atLeast: 0.9,
      says: "server CPU per verify-token on an idle mesh over one holding them at least 0.9 (two meshes sent at once, the holder alternating; geometric mean of each holder's median)",
    },
    { field: "failed", atMost: 0, says: "every held long-poll answered (queued, at its end)" },
  ],
  "inbox-wake": [
    {
      field: "ratio",
      atMost: 5,
      says: "from a gate request's commit to the held inbox long-poll's answer: median at most 5x a bare JetStream publish-and-ack's (median of interleaved rounds' ratios of medians)",
    },
    { field: "p99_ratio", atMost: 10, says: "its p99 at most 10x the publish-and-ack's, over all kept samples" },
  ],
  "push-commit": [
    {
      field: "ratio",
      atMost: 3,
      says: "p99 from a gate request's commit to the push service receiving its encrypted Web Push at most 3x a bare JetStream publish-and-ack's p99",
    },
  ],
  "push-burst": [
    {
      field: "ratio",
      atLeast: 0.5,
      says: "1,000 subscriptions' pushes for one burst of cards at least half the rate of bare HTTP POSTs of their size to the same endpoint (median of interleaved rounds)",
    },
  ],
  growth: [
    {
      field: "worst_lookup_ratio",
      atMost: 1.5,
      says: "every lookup's p50 at 1,000,000 rows a table at most 1.5x its p50 at 10,000",
    },
    {
      field: "worst_scan_ratio",
      atMost: 1.5,
      says: "every periodic scan of 1,000 due rows at most 1.5x as long at 1,000,000 rows as at 10,000 (O(due))",
    },
  ],
  "widget-wake": [
    {
      field: "ratio",
      atMost: 3,
      says: "from a sandbox human's confirmation commit to the page's svc:gate-status event: median at most 3x the status long-poll's own wake (median of interleaved rounds' ratios of medians)",
    },
    { field: "p99_ratio", atMost: 6, says: "its p99 at most 6x the status long-poll's, over all kept samples" },
  ],
  "mcp-tool-call": [
    {
      field: "ratio",
      atMost: 1.5,
      says: "server CPU of a tool call through /mcp (2026-07-28) at most 1.5x the same operation through its JSON route (median of rounds' ratios, the arms interleaved in mirrored slices of 30 calls)",
    },
    { field: "legacy_ratio", atMost: 1.5, says: "the same in the 2025-11-25 revision" },
  ],
  "tracing-on": [
    {
      field: "ratio",
      atMost: 1.15,
      says: "server CPU per create-link through the gateway, tracing on at 100% sampling to an OTLP receiver on localhost, at most 1.15x tracing off",
    },
  ],
  "tracing-off": [
    {
      field: "ratio",
      atMost: 1.03,
      says: "server CPU per verify-token (the edge route) through a mesh with tracing off at most 1.03x the same at the previous commit (both meshes sent each round at once)",
    },
    { field: "create_link_ratio", says: "" },
  ],
  "trust-layer-screening": [
    {
      field: "p99_ms",
      atMost: 2,
      says: "screening a 28 KB card of realistic content: p99 at most 2 ms (3,000 samples, each its wall time less its wait for a CPU)",
    },
    {
      field: "ratio",
      atLeast: 0.1,
      says: "its throughput per CPU second at least 10% of JSON.parse's of the same bytes (median of interleaved rounds)",
    },
  ],
};

/**
 * Benchmarks that run only when named (`npm run bench -- growth`), with their own time limit: the
 * growth benchmark fills tables to a million rows, which takes many minutes on two cores.
 */
const onlyWhenNamed: Record<string, number> = { "test/bench/growth.bench.ts": 60 * 60_000 };

/**
 * `--repeat N` runs the chosen set N times over; the summary then shows each goal's N verdicts and whether they agree.
 * `--baseline REF` runs the benchmarks of commit REF instead, from a checkout of it beside this one (`checkoutAt`).
 */
const args = process.argv.slice(2);
const optionValue = (option: string): string | undefined => {
  const at = args.indexOf(option);
  return at === -1 ? undefined : (args.splice(at, 2)[1] ?? "");
};
const repeatValue = optionValue("--repeat");
const baselineRef = optionValue("--baseline");
const repeat = repeatValue === undefined ? 1 : Number(repeatValue);
if (!Number.isInteger(repeat) || repeat < 1) throw new Error("--repeat takes a whole number of runs, at least 1");
if (baselineRef === "") throw new Error("--baseline takes a commit");
const only = args;
const benchRoot = baselineRef === undefined ? root : checkoutAt(baselineRef).root;
if (baselineRef !== undefined) process.stdout.write(`benchmarks of ${baselineRef}, from ${benchRoot}\n`);
const scripts = globSync(
  ["services/*/bench/*.bench.ts", "gateway/bench/*.bench.ts", "gateway/sdk/bench/*.bench.ts", "test/bench/*.bench.ts"],
  { cwd: benchRoot },
)
  .sort()
  .filter((file) => (only.length === 0 ? onlyWhenNamed[file] === undefined : only.some((name) => file.includes(name))));

type Result = { name: string; [field: string]: unknown };
/** One full pass over the scripts: every result line they print, and the scripts that failed. */
function runOnce(pass: number): { results: Result[]; failed: string[] } {
  const results: Result[] = [];
  const failed: string[] = [];
  for (const script of scripts) {
    process.stdout.write(`\n== ${script}${repeat > 1 ? ` (run ${pass} of ${repeat})` : ""}\n`);
    const run = spawnSync(process.execPath, [script], {
      cwd: benchRoot,
      encoding: "utf8",
      stdio: ["ignore", "pipe", "inherit"],
      timeout: onlyWhenNamed[script] ?? 10 * 60_000,
    });
    process.stdout.write(run.stdout ?? "");
    for (const line of (run.stdout ?? "").split("\n")) {
      if (!line.startsWith("{")) continue;
      try {
        const parsed = JSON.parse(line);
        if (typeof parsed.name === "string") results.push(parsed);
      } catch {
        // a log line that happens to start with a brace
      }
    }
    if (run.status !== 0) {
      process.stdout.write(`(${script} exited with ${run.status ?? run.signal})\n`);
      failed.push(`${script} exited with ${run.status ?? run.signal}`);
    }
  }
  return { results, failed };
}

const passes = Array.from({ length: repeat }, (_, index) => runOnce(index + 1));

const shown = (value: number | undefined) =>
  value === undefined ? "-" : Number.isInteger(value) ? String(value) : value.toFixed(2);
const judged = (goal: Goal, value: number | undefined): string => {
  if (goal.says === "" || value === undefined) return "";
  const met =
    (goal.atLeast === undefined || value >= goal.atLeast) && (goal.atMost === undefined || value <= goal.atMost);
  return met ? "meets goal" : "MISSES goal";
};

process.stdout.write("\n== summary\n");
const names = [...new Set(passes.flatMap((pass) => pass.results.map((result) => result.name)))];
for (const name of names) {
  for (const goal of goals[name] ?? [{ field: "ratio", says: "" }]) {
    const measured = passes.map((pass) => {
      const value = pass.results.find((result) => result.name === name)?.[goal.field];
      return typeof value === "number" ? value : undefined;
    });
    const verdicts = measured.map((value) => judged(goal, value));
    const values = measured.map((value) => shown(value).padStart(6)).join(" ");
    const verdict =
      repeat === 1
        ? verdicts[0]
        : verdicts.every((v) => v === verdicts[0])
          ? `${verdicts[0]} (agree)`
          : `FLIPS: ${verdicts.join(" / ")}`;
    process.stdout.write(
      `${name.padEnd(26)} ${goal.field.padEnd(30)} ${values}  ${verdict}${goal.says ? `  (${goal.says})` : ""}\n`,
    );
  }
  // CPU per operation holds still on a loaded machine where rates swing, so it is shown beside the ratio.
  const cpuFields = [
    ...new Set(
      passes.flatMap((pass) =>
        Object.keys(pass.results.find((result) => result.name === name) ?? {}).filter((f) => f.endsWith("_cpu_us")),
      ),
    ),
  ];
  for (const field of cpuFields) {
    const values = passes
      .map((pass) => pass.results.find((result) => result.name === name)?.[field])
      .map((value) => shown(typeof value === "number" ? value : undefined).padStart(6))
      .join(" ");
    process.stdout.write(`${"".padEnd(26)} ${field.padEnd(30)} ${values}\n`);
  }
}
for (const [index, pass] of passes.entries()) {
  for (const failure of pass.failed) {
    process.stdout.write(`FAILED${repeat > 1 ? ` in run ${index + 1}` : ""}: ${failure}; its goals are unmeasured\n`);
  }
}
