import { Agent } from "node:http";
import { createInternalClient, createLogger, openDatabase, openStatementPool, systemClock } from "@svc/platform";
import { SigningService } from "@svc/proto/signing/v1/signing_pb.js";
import { median, startBenchMesh } from "../../test/bench/bench-infrastructure.ts";
import {
  cpuMicrosSince,
  cpuReading,
  mintAttestations,
  postgresProcesses,
  withChildren,
} from "../../test/bench/process-cpu.ts";
import { entities } from "../src/credentials/entities.ts";
import { parseStage } from "../src/http/parse.ts";
import { handleStage, type Stage, validateStage } from "../src/http/pipeline.ts";
import { startPublicServer } from "../src/http/public-server.ts";
import { migrations } from "../src/migrations/index.ts";
import { KeySetCache } from "../src/operations/jwks.ts";
import { LedgerHandover } from "../src/operations/ledger-handover.ts";
import { verifyTokenRoute } from "../src/operations/verify-token.ts";
import { TokenCheckBatcher } from "../src/operations/verify-token-batcher.ts";
import { VerifyingKeys } from "../src/operations/verifying-keys.ts";
import { rateLimitStage } from "../src/rate-limits/rate-limit-stage.ts";
import { decideRateLimits, RateLimiter } from "../src/rate-limits/rate-limiter.ts";
import { aliasStage } from "../src/rename-window/alias-stage.ts";
import { aliasTable, sunset } from "../src/rename-window/aliases.ts";
import type { GatewayServices } from "../src/services.ts";
import { startVerifyTokenLoad } from "./verify-token-load-thread.ts";
import { postVerifyToken } from "./verify-token-post.ts";

/**
 * What the rate limiter and the alias stage cost the gateway's throughput: POST /v1/sdk/verify-token
 * through the gateway pipeline with them and without them, against the same signing service. The
 * limiter counts each request per client IP (the anonymous tier) with a limit nothing reaches, so every
 * request pays the full decision: one atomic statement in PostgreSQL, shared by the requests decided
 * together, which also records the token's check in the ledger. Without them, the rate-limit stage
 * counts nothing (anonymous requests uncounted) and records the check alone, so the two arms differ by
 * the limiter's decision and the alias stage only. Rounds alternate between the two so that drift hits both.
 *
 * Throughput is what the gateway carries when the offered load keeps it busy. The client (on a thread
 * of its own, verify-token-load.ts) keeps 16 and then 256 requests in flight, and each arm's
 * throughput is its best level; on this two-core machine 512 in flight carried no more than 256 in a
 * trial. At 16 in flight both arms leave part of the machine idle (`levels[].cores_used`): that level
 * mostly measures latency (16 / latency), so its ratio is reported beside the goal
 * (`ratio_at_16_in_flight`), as is the limiter's added latency on its own (`latency_ms_p50`). What the
 * limiter and alias stage cost there is judged by CPU per request instead (`cpu_ratio_at_16_in_flight`,
 * the median of the rounds' ratios, with the CPU per request of each arm beside it, and PostgreSQL's part
 * of it), which idle cores do not move.
 */
const levels = [16, 256];
const roundMs = 2000;
/**
 * Rounds a level. The goal at 16 in flight is a ratio of CPU per request, whose rounds swing by about a tenth
 * each way on this machine: five rounds let one run's median land either side of the line, so it takes 11.
 */
const roundsAt: Record<number, number> = { 16: 11, 256: 5 };
/**
 * Fresh tokens for an arm's first round at a level: twice what the faster arm has carried (about 8,000/s at
 * 256 in flight); later rounds get three times what the arm used in its last round there, since minting them
 * all costs more time than the rounds themselves on a loaded machine.
 */
const tokensPerRound = 32_000;

const mesh = await startBenchMesh(["signing"]);
const logger = createLogger("bench", {}, "warn");
try {
  const signing = createInternalClient(SigningService, mesh.urls.signing!, { timeoutMs: 30_000 });
  const orm = await openDatabase({
    url: mesh.databaseUrl,
    schema: "gateway",
    entities,
    migrations,
    storedDefinitions: [decideRateLimits],
    logger,
  });
  // Connections stay open between rounds, as under steady traffic: minting the next round's tokens takes
  // longer than pg's idle timeout, and a round that opened them again paid for it in one arm and not the other.
  const pool = openStatementPool({ url: mesh.databaseUrl, schema: "gateway", max: 4, logger, idleTimeoutMs: 0 });
  const limiter = new RateLimiter({ pool, leaseTtlMs: 60_000 });
  const services = {
    signing,
    keySet: new KeySetCache({ signing, logger }),
    verifyingKeys: new VerifyingKeys({ signing, clock: systemClock, logger }),
    ledgerHandover: new LedgerHandover({ signing: new TokenCheckBatcher(signing), until: null, clock: systemClock }),
    clock: systemClock,
  } as unknown as GatewayServices;
  const limitStage = (anonymousPerMinute: number) =>
    rateLimitStage({
      limiter,
      upgradeUrl: "http://127.0.0.1/upgrade",
      anonymousPerMinute,
      trustedProxyHops: 0,
      logger,
    });
  const edge: Stage[] = [
    limitStage(1_000_000_000),
    aliasStage({ table: aliasTable, sunset, link: "http://127.0.0.1/v1/openapi.json" }),
  ];
  const start = (stages: Stage[]) =>
    startPublicServer({
      host: "127.0.0.1",
      port: 0,
      routes: [verifyTokenRoute],
      stages,
      services,
      clock: systemClock,
      logger,
      ready: async () => {},
    });
  const without = await start([parseStage, limitStage(0), validateStage, handleStage]);
  const withEdge = await start([parseStage, ...edge, validateStage, handleStage]);

  const mint = (count: number) => mintAttestations(signing, count);

  const agent = new Agent({ keepAlive: true, maxSockets: 1 });

  // CPU of everything a request costs: this process (the gateway under test) less the load's thread, the
  // mesh's processes (signing) and this benchmark's PostgreSQL, so the cost per request can be
  // compared even when other work on the machine skews the throughput.
  const costedProcesses = (): string[] => [
    ...withChildren([String(process.pid)]),
    ...postgresProcesses(mesh.databaseUrl),
  ];

  const load = startVerifyTokenLoad();
  const ask = load.ask;
  const run = async (origin: string, inFlight: number, durationMs: number, tokens: string[]) => {
    await ask({ kind: "load", tokens });
    // Read the processes again at the end: a backend that a pool opened during the round (after its idle
    // timeout while tokens were minted) counts all of its CPU, which a list taken at the start left out.
    const cpuBefore = cpuReading(costedProcesses());
    const databaseBefore = cpuReading(postgresProcesses(mesh.databaseUrl));
    const report = await ask({ kind: "run", origin, inFlight, durationMs });
    if (report.kind !== "ran")
      throw new Error(`load generator: ${report.kind === "failed" ? report.message : report.kind}`);
    return {
      ops: report.ops,
      used: report.used,
      cpuPerRequest: (cpuMicrosSince(cpuBefore, costedProcesses()) - report.cpu_us) / report.used,
      databaseCpuPerRequest: cpuMicrosSince(databaseBefore, postgresProcesses(mesh.databaseUrl)) / report.used,
    };
  };

  // Warm both (JIT, connection pools, the plpgsql plan), then alternate, level by level.
  await run(without.url, levels[0]!, 1000, await mint(6000));
  await run(withEdge.url, levels[0]!, 1000, await mint(6000));
  const measured: Level[] = [];
  for (const inFlight of levels) {
    const arms = {
      on: { ops: [] as number[], cpu: [] as number[], database: [] as number[] },
      off: { ops: [] as number[], cpu: [] as number[], database: [] as number[] },
    };
    const lastUsed: { on?: number; off?: number } = {};
    const order = [
      ["off", without.url],
      ["on", withEdge.url],
    ] as const;
    for (let round = 0; round < roundsAt[inFlight]!; round++) {
      // Each round swaps which arm goes first, so neither always runs on the machine the other left behind.
      for (const [arm, origin] of round % 2 === 0 ? order : [...order].reverse()) {
        const tokens = await mint(lastUsed[arm] === undefined ? tokensPerRound : 3 * lastUsed[arm] + 1000);
        const { ops, used, cpuPerRequest, databaseCpuPerRequest } = await run(origin, inFlight, roundMs, tokens);
        lastUsed[arm] = used;
        arms[arm].ops.push(ops);
        arms[arm].cpu.push(cpuPerRequest);
        arms[arm].database.push(databaseCpuPerRequest);
      }
    }
    const perRound = (values: (round: number) => number) => median(arms.on.ops.map((_, round) => values(round)));
    const summary = (arm: { ops: number[]; cpu: number[]; database: number[] }): ArmSummary => {
      const ops = median(arm.ops);
      const cpu = median(arm.cpu);
      return {
        ops: Math.round(ops),
        cpu_us_per_request: Math.round(cpu),
        postgres_cpu_us_per_request: Math.round(median(arm.database)),
        cores_used: round2((ops * cpu) / 1e6),
        rounds: arm.ops.map(Math.round),
      };
    };
    measured.push({
      in_flight: inFlight,
      ratio: round2(perRound((round) => arms.on.ops[round]! / arms.off.ops[round]!)),
      cpu_ratio: round2(perRound((round) => arms.on.cpu[round]! / arms.off.cpu[round]!)),
      with_edge: summary(arms.on),
      without_edge: summary(arms.off),
    });
  }
  await load.stop();
  const peakOf = (arm: "with_edge" | "without_edge") => measured.reduce((a, b) => (b[arm].ops > a[arm].ops ? b : a));

  // Latency one request at a time, and the limiter's own decision.
  const latency = async (origin: string, tokens: string[]) => {
    const samples: number[] = [];
    for (const token of tokens) {
      const started = performance.now();
      await postVerifyToken(origin, token, agent);
      samples.push(performance.now() - started);
    }
    return median(samples);
  };
  const offLatency = await latency(without.url, await mint(400));
  const onLatency = await latency(withEdge.url, await mint(400));
  const takes: number[] = [];
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
  for (let i = 0; i < 400; i++) {
    const started = performance.now();
    await limiter.take(plan, new Date());
    takes.push(performance.now() - started);
  }

  agent.destroy();
  await Promise.all([without.stop(), withEdge.stop()]);
  await pool.end();
  await orm.close();
  const peakOn = peakOf("with_edge");
  const peakOff = peakOf("without_edge");
  console.log(
    JSON.stringify({
      name: "gateway-edge",
      ratio: peakOn.with_edge.ops / peakOff.without_edge.ops,
      with_edge_ops: peakOn.with_edge.ops,
      without_edge_ops: peakOff.without_edge.ops,
      peak_in_flight: { with_edge: peakOn.in_flight, without_edge: peakOff.in_flight },
      ratio_at_16_in_flight: measured[0]!.ratio,
      cpu_ratio_at_16_in_flight: measured[0]!.cpu_ratio,
      with_edge_cpu_us: measured[0]!.with_edge.cpu_us_per_request,
      without_edge_cpu_us: measured[0]!.without_edge.cpu_us_per_request,
      with_edge_postgres_cpu_us: measured[0]!.with_edge.postgres_cpu_us_per_request,
      without_edge_postgres_cpu_us: measured[0]!.without_edge.postgres_cpu_us_per_request,
      levels: measured,
      route: "POST /v1/sdk/verify-token",
      latency_ms_p50: {
        with_edge: round2(onLatency),
        without_edge: round2(offLatency),
        added: round2(onLatency - offLatency),
      },
      limiter_take_ms_p50: round2(median(takes)),
    }),
  );
} finally {
  await mesh.stop();
}

interface ArmSummary {
  ops: number;
  cpu_us_per_request: number;
  /** Of that, this benchmark's PostgreSQL, where the limiter's decision runs: what the JS profile cannot show. */
  postgres_cpu_us_per_request: number;
  /** Cores of CPU the arm kept busy (of the machine's two): below two, part of the machine waited. */
  cores_used: number;
  rounds: number[];
}

interface Level {
  in_flight: number;
  /** The median of the rounds' ratios, with edge to without (each round runs both arms). */
  ratio: number;
  cpu_ratio: number;
  with_edge: ArmSummary;
  without_edge: ArmSummary;
}

function round2(n: number): number {
  return Math.round(n * 100) / 100;
}
