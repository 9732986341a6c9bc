/**
 * Client-side CPU (`process.cpuUsage()` of this process) of `svc.sessions.create()` against a bare `fetch` of the
 * same operation (`POST /v1/sdk/create-session`: the same headers, body and `Idempotency-Key`, the answer read
 * and parsed), both against gateway-like-server.ts, a separate process that answers as the gateway does, so its
 * CPU is not counted. A third arm is the bare fetch with a timeout as the SDK always sets one (an AbortController
 * aborted by a timer, cleared once the answer is read), which Node's fetch charges about 2% of a local call for
 * (`AbortSignal.timeout` cost 5%): `ratio_to_timed_fetch` shows what the SDK adds beyond its timeout. One call at a time; 41 rounds of 1,000 calls, each round started by another arm,
 * each arm collecting its own garbage inside its figure (cpu.ts); the figures are medians of the rounds' ratios.
 * Prints one line: {"name":"sdk-call","sdk_cpu_us":…,"fetch_cpu_us":…,"timed_fetch_cpu_us":…,"ratio":…,
 * "ratio_to_timed_fetch":…}.
 * Run: node gateway/sdk/bench/sdk-call.bench.ts [calls per round]
 */
import { spawn } from "node:child_process";
import { once } from "node:events";
import { Svc } from "../src/index.ts";
import { cpuPerOp, median } from "./cpu.ts";

const server = spawn(process.execPath, [new URL("./gateway-like-server.ts", import.meta.url).pathname], {
  stdio: ["ignore", "pipe", "inherit"],
});
const [chunk] = (await once(server.stdout, "data")) as [Buffer];
const baseUrl = `http://127.0.0.1:${chunk.toString().trim()}/v1`;
const apiKey = `svc_dev_${"b".repeat(40)}`;
const svc = new Svc({ apiKey, baseUrl });

const viaSdk = async (calls: number) => {
  for (let i = 0; i < calls; i++) await svc.sessions.create({ partner_user_id: "user-1" });
};
const bareCall = (timed: boolean) => async (calls: number) => {
  for (let i = 0; i < calls; i++) {
    const timeout = timed ? new AbortController() : undefined;
    const timer = timeout && setTimeout(() => timeout.abort(), 30_000);
    const response = await fetch(`${baseUrl}/sdk/create-session`, {
      ...(timeout && { signal: timeout.signal }),
      method: "POST",
      headers: {
        accept: "application/json",
        authorization: `Bearer ${apiKey}`,
        "content-type": "application/json",
        "idempotency-key": crypto.randomUUID(),
      },
      body: JSON.stringify({ partner_user_id: "user-1" }),
    });
    const answer = JSON.parse(await response.text());
    clearTimeout(timer);
    if (response.status !== 200 || answer.data?.data === undefined) throw new Error("unexpected answer");
  }
};
const bare = bareCall(false);
const timed = bareCall(true);

const perRound = Number(process.argv[2] ?? 1000);
const rounds = 41;
try {
  await viaSdk(300);
  await bare(300);
  await timed(300);
  const arms = { sdk: viaSdk, fetch: bare, timed };
  const spent = { sdk: [] as number[], fetch: [] as number[], timed: [] as number[] };
  const ratios: number[] = [];
  const timedRatios: number[] = [];
  const order = Object.keys(arms) as (keyof typeof arms)[];
  for (let round = 0; round < rounds; round++) {
    // Each round starts with another arm, so no arm always runs first (or last) after the other's garbage.
    for (let k = 0; k < order.length; k++) {
      const arm = order[(round + k) % order.length] as keyof typeof arms;
      spent[arm].push(await cpuPerOp(() => arms[arm](perRound), perRound));
    }
    ratios.push((spent.sdk.at(-1) as number) / (spent.fetch.at(-1) as number));
    timedRatios.push((spent.sdk.at(-1) as number) / (spent.timed.at(-1) as number));
  }
  console.log(
    JSON.stringify({
      name: "sdk-call",
      sdk_cpu_us: Number(median(spent.sdk).toFixed(1)),
      fetch_cpu_us: Number(median(spent.fetch).toFixed(1)),
      timed_fetch_cpu_us: Number(median(spent.timed).toFixed(1)),
      ratio: Number(median(ratios).toFixed(3)),
      ratio_to_timed_fetch: Number(median(timedRatios).toFixed(3)),
    }),
  );
} finally {
  server.kill();
}
