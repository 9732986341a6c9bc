import { spawnSync } from "node:child_process";
import { globSync } from "node:fs";
import { fileURLToPath } from "node:url";

/**
 * Runs every benchmark script of the repository one after another (they share two cores, so never in
 * parallel) and prints each goal's measured ratio. Benchmarks report; they never fail the test suite.
 */
const root = fileURLToPath(new URL("../../", import.meta.url));
const goals: Record<string, { ratio: number; says: string }> = {
  "sign-attestation": { ratio: 1.5, says: "signing at least 1.5x jose SignJWT on the same key" },
  "verify-token": { ratio: 0.7, says: "POST /v1/sdk/verify-token at least 70% of raw crypto.subtle.verify, 16 in flight" },
  "webhook-delivery": { ratio: 0.4, says: "deliveries/s at least 40% of min(bare node:http, single-row UPDATE)" },
  "create-verification-link": { ratio: 0.4, says: "create-verification-link at least 40% of a single-row INSERT at 16 clients" },
  "gateway-edge": { ratio: 0.9, says: "gateway throughput with limiter and alias stage at least 90% of without" },
};

const only = process.argv.slice(2);
const scripts = globSync(["services/*/bench/*.bench.ts", "gateway/bench/*.bench.ts", "test/bench/*.bench.ts"], { cwd: root })
  .sort()
  .filter((file) => only.length === 0 || only.some((name) => file.includes(name)));

const results: { name: string; ratio?: number; [key: string]: unknown }[] = [];
for (const script of scripts) {
  process.stdout.write(`\n== ${script}\n`);
  const run = spawnSync(process.execPath, [script], { cwd: root, encoding: "utf8", stdio: ["ignore", "pipe", "inherit"], timeout: 10 * 60_000 });
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
  if (run.status !== 0) process.stdout.write(`(${script} exited with ${run.status ?? run.signal})\n`);
}

process.stdout.write("\n== summary\n");
for (const result of results) {
  const goal = goals[result.name];
  const verdict = goal && result.ratio !== undefined ? (result.ratio >= goal.ratio ? "meets goal" : "BELOW goal") : "";
  process.stdout.write(`${result.name.padEnd(26)} ratio ${result.ratio?.toFixed(2) ?? "-"}  ${verdict}${goal ? `  (${goal.says})` : ""}\n`);
}
