import { spawn } from "node:child_process";
import { Agent } from "node:http";
import { loadavg } from "node:os";
import { createInternalClient, createLogger, openStatementPool } from "@svc/platform";
import { SigningService } from "@svc/proto/signing/v1/signing_pb.js";
import { median, startBenchMesh, stopOnTerminate } from "../../test/bench/bench-infrastructure.ts";
import { cpuMicrosSince, cpuReading, mintAttestations, postgresProcesses } from "../../test/bench/process-cpu.ts";
import { RateLimiter } from "../src/rate-limits/rate-limiter.ts";
import { startVerifyTokenLoad } from "./verify-token-load-thread.ts";
import { postVerifyToken } from "./verify-token-post.ts";

/**
 * What the rate limiter and the alias stage cost the gateway: POST /v1/sdk/verify-token through the gateway
 * pipeline with them and without them (edge-arm-server.ts). The limiter counts each request per client IP (the
 * anonymous tier) with a limit nothing reaches, so every request pays the full decision: one atomic statement in
 * PostgreSQL, shared by the requests decided together, which also records the token's check in the ledger.
 * Without them, the rate-limit stage counts nothing and records the check alone, so the two arms differ by the
 * limiter's decision and the alias stage only.
 *
 * Each arm is a process of its own with its own PostgreSQL and signing service (`startBenchMesh`), and its own
 * load thread in this process (verify-token-load.ts). An arm's CPU per request is that of its process and its
 * PostgreSQL (the postmaster and every backend, listed again at the round's end), read from /proc; this process,
 * which holds the load, is not counted, nor is signing, which a round does not call (the key set is cached).
 * When the two arms shared one process, each arm's figures carried the other's garbage and scheduling.
 *
 * Each round runs both arms at once, with the same offered load: both figures of a round share the machine's
 * load of that moment, which on a shared machine moves within seconds (alternating rounds gave one arm a different
 * moment than the other, and its throughput at 256 in flight swung from 2,632 to 3,652 req/s within one run).
 * Each verdict is the median of the rounds' ratios, with their interquartile range beside it:
 * - `ratio`, throughput with the stage over without, at the level where the two arms together carried most (of 16
 *   and 256 in flight; on this two-core machine 512 carried no more than 256 in a trial);
 * - `cpu_ratio_at_16_in_flight`, CPU per request with the stage over without, at 16 in flight, where both arms
 *   leave part of the machine idle (`levels[].cores_used`): their throughput there mostly measures latency
 *   (`ratio_at_16_in_flight`, beside the goal, as is the limiter's added latency on its own, `latency_ms_p50`),
 *   and what the stage costs is judged by CPU instead, which idle cores do not move. PostgreSQL's part of it is
 *   beside each arm's.
 */
const levels = [16, 256];
const roundMs = 2000;
/**
 * Rounds at each level, after one warm-up round there that is not kept. The goal at 16 in flight sits near its
 * line (last session's three runs read 1.12, 1.09 and 1.17), so its median takes more rounds.
 */
const roundsAt: Record<number, number> = { 16: 21, 256: 15 };
const warmUpMs = 1000;
/** Fresh tokens for an arm's warm-up round at a level: more than one arm carries in a second on two cores. */
const warmUpTokens = 12_000;
const logger = createLogger("bench", {}, "warn");

type ArmName = "with" | "without";
const armNames: ArmName[] = ["with", "without"];

/** One arm: its mesh (PostgreSQL, NATS, signing), its gateway process and its load thread. */
async function startArm(arm: ArmName) {
  const mesh = await startBenchMesh(["signing"]);
  const server = spawn(
    process.execPath,
    [new URL("./edge-arm-server.ts", import.meta.url).pathname, arm, mesh.databaseUrl, mesh.urls.signing!],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  const exited = new Promise((resolve) => server.once("exit", resolve));
  const stopServer = stopOnTerminate(async () => {
    server.kill("SIGTERM");
    await exited;
  });
  const load = startVerifyTokenLoad();
  const stop = async () => {
    await load.stop();
    await stopServer();
    await mesh.stop();
  };
  try {
    const url = await new Promise<string>((resolve, reject) => {
      server.stdout!.once("data", (line: Buffer) => resolve(line.toString().trim()));
      server.once("exit", (code) => reject(new Error(`the ${arm} arm's gateway exited with ${code} before listening`)));
    });
    const signing = createInternalClient(SigningService, mesh.urls.signing!, { timeoutMs: 30_000 });
    const pid = String(server.pid);
    return {
      url,
      databaseUrl: mesh.databaseUrl,
      mint: (count: number) => mintAttestations(signing, count),
      ask: load.ask,
      /** The arm's gateway process, and its PostgreSQL as it is now. */
      processes: () => ({ gateway: [pid], postgres: postgresProcesses(mesh.databaseUrl) }),
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}
type Arm = Awaited<ReturnType<typeof startArm>>;
type Figures = { ops: number; cpuPerRequest: number; databaseCpuPerRequest: number };

const starting = await Promise.allSettled(armNames.map(startArm));
const arms = Object.fromEntries(
  starting.flatMap((result, at) => (result.status === "fulfilled" ? [[armNames[at]!, result.value]] : [])),
) as Record<ArmName, Arm>;
try {
  for (const result of starting) if (result.status === "rejected") throw result.reason;

  /**
   * Fresh tokens left over from each arm's last round (the load thread uses them in order), and the most each
   * arm carried per second at a level, from which a round's tokens are minted with room to spare.
   */
  const unused: Record<ArmName, string[]> = { with: [], without: [] };
  const bestRate: Record<ArmName, Map<number, number>> = { with: new Map(), without: new Map() };
  const tokensFor = async (arm: ArmName, inFlight: number, durationMs: number) => {
    const rate = bestRate[arm].get(inFlight);
    const wanted = rate === undefined ? warmUpTokens : Math.ceil((2 * rate * durationMs) / 1000) + 1000;
    const tokens = [...unused[arm], ...(await arms[arm].mint(Math.max(0, wanted - unused[arm].length)))];
    unused[arm] = [];
    return tokens;
  };

  /** Both arms at once, the same offered load, each costed over the same window. */
  const round = async (inFlight: number, durationMs: number): Promise<Record<ArmName, Figures>> => {
    const tokens = Object.fromEntries(
      await Promise.all(armNames.map(async (arm) => [arm, await tokensFor(arm, inFlight, durationMs)] as const)),
    ) as Record<ArmName, string[]>;
    await Promise.all(armNames.map((arm) => arms[arm].ask({ kind: "load", tokens: tokens[arm] })));
    const before = armNames.map((arm) => {
      const { gateway, postgres } = arms[arm].processes();
      return { gateway: cpuReading(gateway), postgres: cpuReading(postgres) };
    });
    const reports = await Promise.all(
      armNames.map((arm) => arms[arm].ask({ kind: "run", origin: arms[arm].url, inFlight, durationMs })),
    );
    const figures = armNames.map((arm, at): [ArmName, Figures] => {
      const report = reports[at]!;
      if (report.kind !== "ran")
        throw new Error(`${arm} arm's load: ${report.kind === "failed" ? report.message : report.kind}`);
      const { gateway, postgres } = arms[arm].processes();
      const database = cpuMicrosSince(before[at]!.postgres, postgres);
      unused[arm] = tokens[arm].slice(report.used);
      bestRate[arm].set(inFlight, Math.max(bestRate[arm].get(inFlight) ?? 0, report.used / (durationMs / 1000)));
      return [
        arm,
        {
          ops: report.ops,
          cpuPerRequest: (cpuMicrosSince(before[at]!.gateway, gateway) + database) / report.used,
          databaseCpuPerRequest: database / report.used,
        },
      ];
    });
    return Object.fromEntries(figures) as Record<ArmName, Figures>;
  };

  const measured: Level[] = [];
  for (const inFlight of levels) {
    // Warm both (JIT, connection pools, the plpgsql plan, the batches this level makes) before anything is kept.
    await round(inFlight, warmUpMs);
    const kept: Record<ArmName, Figures>[] = [];
    const rounds = roundsAt[inFlight]!;
    for (let index = 0; index < rounds; index++) {
      const figures = await round(inFlight, roundMs);
      kept.push(figures);
      process.stderr.write(
        `${inFlight} in flight, round ${index + 1} of ${rounds}: ${armNames
          .map((arm) => `${arm} ${Math.round(figures[arm].ops)}/s ${Math.round(figures[arm].cpuPerRequest)} µs`)
          .join(", ")}\n`,
      );
    }
    const of = (arm: ArmName, figure: keyof Figures) => kept.map((figures) => figures[arm][figure]);
    measured.push({
      in_flight: inFlight,
      ratio: paired(of("with", "ops"), of("without", "ops")),
      cpu_ratio: paired(of("with", "cpuPerRequest"), of("without", "cpuPerRequest")),
      with_edge: summary(of("with", "ops"), of("with", "cpuPerRequest"), of("with", "databaseCpuPerRequest")),
      without_edge: summary(
        of("without", "ops"),
        of("without", "cpuPerRequest"),
        of("without", "databaseCpuPerRequest"),
      ),
    });
  }
  const atPeak = measured.reduce((a, b) =>
    b.with_edge.ops + b.without_edge.ops > a.with_edge.ops + a.without_edge.ops ? b : a,
  );
  const at16 = measured.find((level) => level.in_flight === 16)!;

  // Latency one request at a time, and the limiter's own decision, once the rounds are over.
  const latency = async (arm: ArmName) => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const samples: number[] = [];
    for (const token of await arms[arm].mint(400)) {
      const started = performance.now();
      await postVerifyToken(arms[arm].url, token, agent);
      samples.push(performance.now() - started);
    }
    agent.destroy();
    return median(samples);
  };
  const offLatency = await latency("without");
  const onLatency = await latency("with");
  const pool = openStatementPool({ url: arms.with.databaseUrl, schema: "gateway", max: 1, logger });
  const limiter = new RateLimiter({ pool, leaseTtlMs: 60_000 });
  const plan = {
    tier: {
      scope: "ip",
      buckets: [{ name: "per_minute" as const, limit: 1_000_000_000, windowSeconds: 60, perClientIp: true }],
      developmentError: false,
      reportsByDefault: false,
    },
    subject: "ip:bench",
    clientIp: "bench",
  };
  const takes: number[] = [];
  for (let i = 0; i < 400; i++) {
    const started = performance.now();
    await limiter.take(plan, new Date());
    takes.push(performance.now() - started);
  }
  await pool.end();

  console.log(
    JSON.stringify({
      name: "gateway-edge",
      ratio: atPeak.ratio.median,
      ratio_iqr: atPeak.ratio.iqr,
      ratio_in_flight: atPeak.in_flight,
      with_edge_ops: atPeak.with_edge.ops,
      without_edge_ops: atPeak.without_edge.ops,
      ratio_at_16_in_flight: at16.ratio.median,
      cpu_ratio_at_16_in_flight: at16.cpu_ratio.median,
      cpu_ratio_at_16_in_flight_iqr: at16.cpu_ratio.iqr,
      with_edge_cpu_us: at16.with_edge.cpu_us_per_request,
      without_edge_cpu_us: at16.without_edge.cpu_us_per_request,
      with_edge_postgres_cpu_us: at16.with_edge.postgres_cpu_us_per_request,
      without_edge_postgres_cpu_us: at16.without_edge.postgres_cpu_us_per_request,
      levels: measured,
      route: "POST /v1/sdk/verify-token",
      method: `both arms at once, each in its own process; rounds of ${roundMs} ms: ${levels.map((level) => `${roundsAt[level]} at ${level} in flight`).join(", ")}`,
      latency_ms_p50: {
        with_edge: round2(onLatency),
        without_edge: round2(offLatency),
        added: round2(onLatency - offLatency),
      },
      limiter_take_ms_p50: round2(median(takes)),
      load_average: loadavg().map(round2),
      seconds: Math.round(performance.now() / 1000),
    }),
  );
} finally {
  await Promise.all(Object.values(arms).map((arm) => arm.stop()));
}

/** The median of the rounds' ratios of `over` to `under` (each round measures both), their interquartile range and each. */
function paired(over: number[], under: number[]): Paired {
  const ratios = over.map((value, index) => value / under[index]!);
  const sorted = [...ratios].sort((a, b) => a - b);
  const quartile = (q: number) => round2(sorted[Math.round((sorted.length - 1) * q)]!);
  return { median: round2(median(ratios)), iqr: [quartile(0.25), quartile(0.75)], rounds: ratios.map(round2) };
}

function summary(ops: number[], cpu: number[], database: number[]): ArmSummary {
  const medianOps = median(ops);
  const medianCpu = median(cpu);
  return {
    ops: Math.round(medianOps),
    cpu_us_per_request: Math.round(medianCpu),
    postgres_cpu_us_per_request: Math.round(median(database)),
    cores_used: round2((medianOps * medianCpu) / 1e6),
    rounds: ops.map(Math.round),
  };
}

interface ArmSummary {
  /** Requests a second, the median of the rounds. */
  ops: number;
  /** The arm's gateway process and its PostgreSQL, the median of the rounds. */
  cpu_us_per_request: number;
  /** Of that, its PostgreSQL, where the limiter's decision runs: what the JS profile cannot show. */
  postgres_cpu_us_per_request: number;
  /** Cores of CPU the arm kept busy, of the machine's two, which the arms share. */
  cores_used: number;
  rounds: number[];
}

interface Paired {
  median: number;
  iqr: [number, number];
  rounds: number[];
}

interface Level {
  in_flight: number;
  /** Throughput with the stage over without. */
  ratio: Paired;
  /** CPU per request with the stage over without. */
  cpu_ratio: Paired;
  with_edge: ArmSummary;
  without_edge: ArmSummary;
}

function round2(n: number): number {
  return Math.round(n * 100) / 100;
}
