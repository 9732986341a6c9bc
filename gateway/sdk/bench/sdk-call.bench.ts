/**
 * Client-side CPU (`process.cpuUsage()` of this process) of `svc.sessions.create()` against a bare `fetch` of the
 * same operation (`POST /v1/sdk/create-session`: the same headers, body and `Idempotency-Key`, the answer read
 * and parsed), both against gateway-like-server.ts, a separate process that answers as the gateway does, so its
 * CPU is not counted. One call at a time; rounds alternate the arms' order; the figure is the median of the
 * rounds' ratios. Prints one line: {"name":"sdk-call","sdk_cpu_us":…,"fetch_cpu_us":…,"ratio":…}.
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
const bare = async (calls: number) => {
  for (let i = 0; i < calls; i++) {
    const response = await fetch(`${baseUrl}/sdk/create-session`, {
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
    if (response.status !== 200 || answer.data?.data === undefined) throw new Error("unexpected answer");
  }
};

const perRound = Number(process.argv[2] ?? 2000);
const rounds = 9;
try {
  await viaSdk(300);
  await bare(300);
  const ratios: number[] = [];
  const spent = { sdk: [] as number[], fetch: [] as number[] };
  for (let round = 0; round < rounds; round++) {
    const arms = [
      async () => spent.sdk.push(await cpuPerOp(() => viaSdk(perRound), perRound)),
      async () => spent.fetch.push(await cpuPerOp(() => bare(perRound), perRound)),
    ];
    for (const arm of round % 2 === 0 ? arms : arms.reverse()) await arm();
    ratios.push((spent.sdk.at(-1) as number) / (spent.fetch.at(-1) as number));
  }
  console.log(
    JSON.stringify({
      name: "sdk-call",
      sdk_cpu_us: Number(median(spent.sdk).toFixed(1)),
      fetch_cpu_us: Number(median(spent.fetch).toFixed(1)),
      ratio: Number(median(ratios).toFixed(3)),
    }),
  );
} finally {
  server.kill();
}
