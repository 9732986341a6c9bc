import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { startInfrastructure } from "@svc/local-mesh/infrastructure";
import { type Mesh, type MeshOptions, type ServiceName, startMesh } from "@svc/local-mesh/mesh";
import pg from "pg";
import { cpuMicrosSince, cpuReading, postgresProcesses, withChildren } from "./process-cpu.ts";

/** What a SIGTERM must stop: run.ts sends one when a script outlives its time, and Node's default would leave them. */
const running = new Set<() => Promise<void>>();
// `on`, not `once`: signal-exit (a dependency's) re-raises a signal it finds no other listener for.
process.on("SIGTERM", () => {
  setTimeout(() => process.exit(143), 30_000).unref();
  void Promise.allSettled([...running].map((stop) => stop())).then((stopped) => {
    for (const outcome of stopped) if (outcome.status === "rejected") console.error("stopping:", outcome.reason);
    process.exit(143);
  });
});

/** Runs `stop` if the script is terminated before it calls the returned function itself. */
export function stopOnTerminate(stop: () => Promise<void>): () => Promise<void> {
  const once = async () => {
    running.delete(once);
    await stop();
  };
  running.add(once);
  return once;
}

/**
 * A throwaway Postgres, NATS and (part of, `only`) the mesh for one benchmark script; everything goes at stop.
 * `startMesh` may be another checkout's (`checkoutAt`), so that an arm runs that commit's code.
 */
export async function startBenchMesh(
  only?: ServiceName[],
  options: {
    env?: Record<string, string>;
    startMesh?: (options: MeshOptions) => Promise<Mesh>;
    /** More PostgreSQL server settings (`name=value`). */
    postgresSettings?: readonly string[];
  } = {},
) {
  const dir = mkdtempSync(join(tmpdir(), "svc-bench-"));
  // As root, PostgreSQL runs as the postgres user, which must be able to enter the data dir's parent.
  chmodSync(dir, 0o755);
  const infrastructure = await startInfrastructure({ dir, durable: false, postgresSettings: options.postgresSettings });
  const client = new pg.Client({ connectionString: infrastructure.postgresUrl });
  await client.connect();
  await client.query("create database bench");
  await client.end();
  const databaseUrl = new URL(infrastructure.postgresUrl);
  databaseUrl.pathname = "/bench";
  const mesh = await (options.startMesh ?? startMesh)({
    env: {
      SVC_DATABASE_URL: databaseUrl.toString(),
      SVC_NATS_URL: infrastructure.natsUrl,
      SVC_LOG_LEVEL: "warn",
      // The limiter still decides every request; a limit no benchmark reaches keeps it from refusing them.
      GATEWAY_RATE_LIMIT_ANONYMOUS_PER_MINUTE: "1000000000",
      ...options.env,
    },
    ports: "free",
    only,
    // Other work on a shared machine can hold a process's start well past the mesh's usual 30 s.
    readyTimeoutMs: 120_000,
    log: () => {},
  }).catch(async (error: unknown) => {
    // A mesh that did not come up must not leave its PostgreSQL and nats-server running.
    await infrastructure.stop();
    rmSync(dir, { recursive: true, force: true });
    throw error;
  });
  const stop = stopOnTerminate(async () => {
    await mesh.stop();
    await infrastructure.stop();
    rmSync(dir, { recursive: true, force: true });
  });
  return {
    ...mesh,
    databaseUrl: databaseUrl.toString(),
    natsUrl: infrastructure.natsUrl,
    /** Every server process: the mesh's services, PostgreSQL (postmaster and backends) and the nats-server. */
    serverProcesses(): string[] {
      const services = [...(only ?? (Object.keys(mesh.urls) as ServiceName[])), "gateway" as const]
        .flatMap((name) => mesh.pid(name) ?? [])
        .map(String);
      return [...services, ...postgresProcesses(databaseUrl.toString()), ...natsProcesses(infrastructure.natsUrl)];
    },
    natsProcesses: () => natsProcesses(infrastructure.natsUrl),
    stop,
  };
}

/** Runs `task` with `concurrency` loops in flight until `durationMs` passes; returns completed operations per second. */
export async function measureThroughput(
  concurrency: number,
  durationMs: number,
  task: (i: number) => Promise<void>,
): Promise<number> {
  let done = 0;
  let next = 0;
  const deadline = performance.now() + durationMs;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < deadline) {
        await task(next++);
        done++;
      }
    }),
  );
  return done / ((performance.now() - started) / 1000);
}

/** The middle value (the upper one of an even count), as every benchmark reports its rounds. */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

/** The 99th percentile (nearest rank). */
export function p99(values: readonly number[]): number {
  return [...values].sort((a, b) => a - b)[Math.ceil(values.length * 0.99) - 1]!;
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * A bare JetStream publish-and-ack of 64 bytes on the benchmark's server, on a stream of its own: the
 * baseline of the wake benchmarks. Each call is one sample, in ms.
 */
export async function jetStreamPublishAndAck(nc: NatsConnection, stream: string): Promise<() => Promise<number>> {
  await (await jetstreamManager(nc)).streams.add({ name: stream, subjects: [`${stream.toLowerCase()}.>`] });
  const js = jetstream(nc);
  const payload = new Uint8Array(64);
  return async () => {
    const started = performance.now();
    await js.publish(`${stream.toLowerCase()}.one`, payload);
    return performance.now() - started;
  };
}

/** The benchmark's nats-server, found by the port of `natsUrl`. */
function natsProcesses(natsUrl: string): string[] {
  const port = new URL(natsUrl).port;
  const server = readdirSync("/proc").find((pid) => {
    try {
      const args = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
      return args[0]?.endsWith("nats-server") && args[args.indexOf("-p") + 1] === port;
    } catch {
      return false;
    }
  });
  if (!server) throw new Error("the benchmark's nats-server is not running");
  return withChildren([server]);
}

/** One side of an interleaved comparison: a sample is one operation's latency in ms. */
type Arm = {
  sample: () => Promise<number>;
  perRound: number;
  /** The server processes whose CPU the samples cost, listed again at each round's end (new PostgreSQL backends count). */
  processes: () => string[];
};
type ArmResult = { samples: number[]; medianMs: number; p99Ms: number; cpuUsPerSample: number };

/**
 * The method for latencies on a shared machine: `arm` and `baseline` take turns in rounds of `perRound`
 * samples each, which goes first swapping every round, so both see the same load; each round's ratio is
 * the arm's median over the baseline's, and `ratio` is the median of those. The first `warmUp` rounds are
 * not kept. CPU per sample is the server processes' CPU over an arm's rounds (from /proc, so this process,
 * the load generator, is left out) divided by its samples.
 */
export async function interleavedRounds(rounds: number, warmUp: number, arm: Arm, baseline: Arm) {
  const kept = { arm: { samples: [] as number[], cpuUs: 0 }, baseline: { samples: [] as number[], cpuUs: 0 } };
  const roundRatios: number[] = [];
  const block = async (side: Arm) => {
    const before = cpuReading(side.processes());
    const samples: number[] = [];
    for (let i = 0; i < side.perRound; i++) samples.push(await side.sample());
    return { samples, cpuUs: cpuMicrosSince(before, side.processes()) };
  };
  for (let round = 0; round < warmUp + rounds; round++) {
    const armFirst = round % 2 === 0;
    const first = await block(armFirst ? arm : baseline);
    const second = await block(armFirst ? baseline : arm);
    if (round < warmUp) continue;
    const [a, b] = armFirst ? [first, second] : [second, first];
    kept.arm.samples.push(...a.samples);
    kept.arm.cpuUs += a.cpuUs;
    kept.baseline.samples.push(...b.samples);
    kept.baseline.cpuUs += b.cpuUs;
    roundRatios.push(median(a.samples) / median(b.samples));
  }
  const result = (side: typeof kept.arm): ArmResult => ({
    samples: side.samples,
    medianMs: median(side.samples),
    p99Ms: p99(side.samples),
    cpuUsPerSample: side.cpuUs / side.samples.length,
  });
  return {
    arm: result(kept.arm),
    baseline: result(kept.baseline),
    ratio: median(roundRatios),
    minRoundRatio: Math.min(...roundRatios),
    maxRoundRatio: Math.max(...roundRatios),
  };
}

/** The result fields of a wake judged against a bare JetStream publish-and-ack (inbox and long-poll wakes). */
export function wakeAgainstPublish(wakes: Awaited<ReturnType<typeof interleavedRounds>>) {
  return {
    ratio: wakes.ratio,
    p99_ratio: wakes.arm.p99Ms / wakes.baseline.p99Ms,
    wake_median_ms: wakes.arm.medianMs,
    wake_p99_ms: wakes.arm.p99Ms,
    jetstream_ack_median_ms: wakes.baseline.medianMs,
    jetstream_ack_p99_ms: wakes.baseline.p99Ms,
    wake_cpu_us: Math.round(wakes.arm.cpuUsPerSample),
    publish_cpu_us: Math.round(wakes.baseline.cpuUsPerSample),
    min_round_ratio: wakes.minRoundRatio,
    max_round_ratio: wakes.maxRoundRatio,
    wakes: wakes.arm.samples.length,
    publishes: wakes.baseline.samples.length,
  };
}
