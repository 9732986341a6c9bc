import { Agent } from "node:http";
import { parentPort } from "node:worker_threads";
import { measureThroughput } from "../../test/bench/bench-infrastructure.ts";
import { postVerifyToken } from "./verify-token-post.ts";

/**
 * The edge benchmark's client, on a thread of its own so that the gateway under test has its event
 * loop to itself, as it would behind real clients. Told the tokens first (`load`), then to run
 * (`run`), so that handing the tokens over falls outside the measured window: it posts them to
 * verify-token with `inFlight` requests under way until `durationMs` passes, and every answer must be
 * a valid token. It reports its own thread's CPU (`cpu_us`), which the edge benchmark, whose gateway runs in
 * this same process, leaves out of the server's.
 */
export type LoadOrder =
  | { kind: "load"; tokens: string[] }
  | { kind: "run"; origin: string; inFlight: number; durationMs: number };
export type LoadReport =
  | { kind: "loaded" }
  | { kind: "ran"; ops: number; used: number; cpu_us: number }
  | { kind: "failed"; message: string };

let tokens: string[] = [];

async function run(origin: string, inFlight: number, durationMs: number): Promise<LoadReport> {
  const agent = new Agent({ keepAlive: true, maxSockets: inFlight });
  let used = 0;
  const cpuBefore = process.threadCpuUsage();
  try {
    const ops = await measureThroughput(inFlight, durationMs, async () => {
      const token = tokens[used++];
      if (!token) throw new Error(`ran out of fresh tokens after ${used - 1} of ${tokens.length}`);
      await postVerifyToken(origin, token, agent);
    });
    const cpu = process.threadCpuUsage(cpuBefore);
    return { kind: "ran", ops, used, cpu_us: cpu.user + cpu.system };
  } finally {
    agent.destroy();
  }
}

parentPort!.on("message", (order: LoadOrder) => {
  if (order.kind === "load") {
    tokens = order.tokens;
    parentPort!.postMessage({ kind: "loaded" } satisfies LoadReport);
    return;
  }
  run(order.origin, order.inFlight, order.durationMs).then(
    (report) => parentPort!.postMessage(report),
    (error: unknown) => parentPort!.postMessage({ kind: "failed", message: String(error) } satisfies LoadReport),
  );
});
