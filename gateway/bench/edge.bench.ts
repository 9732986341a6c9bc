import { readdirSync, readFileSync } from "node:fs";
import { Agent, request } from "node:http";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { createInternalClient, createLogger, openDatabase, openStatementPool, systemClock } from "@svc/platform";
import { SigningService } from "@svc/proto/signing/v1/signing_pb.js";
import { measureThroughput, median, startBenchMesh } from "../../test/bench/bench-infrastructure.ts";
import { entities } from "../src/credentials/entities.ts";
import { aliasStage } from "../src/edge/alias-stage.ts";
import { aliasTable, sunset } from "../src/edge/aliases.ts";
import { RateLimiter } from "../src/edge/rate-limiter.ts";
import { rateLimitStage } from "../src/edge/rate-limit-stage.ts";
import { parseStage } from "../src/http/parse.ts";
import { handleStage, validateStage, type Stage } from "../src/http/pipeline.ts";
import { startPublicServer } from "../src/http/public-server.ts";
import { migrations } from "../src/migrations/index.ts";
import { KeySetCache } from "../src/operations/jwks.ts";
import { verifyTokenRoute } from "../src/operations/verify-token.ts";
import type { GatewayServices } from "../src/services.ts";

/**
 * POST /v1/sdk/verify-token through the gateway pipeline with the rate limiter and the alias stage, and
 * the same pipeline without them, against the same signing service, 16 requests in flight. The limiter
 * counts the request per client IP (the anonymous tier) with a limit nothing reaches, so every request
 * pays the full decision: one atomic statement in PostgreSQL. Rounds alternate so drift hits both.
 */
const inFlight = 16;
const roundMs = 3000;
const rounds = 5;

const mesh = await startBenchMesh(["signing"]);
const logger = createLogger("bench", {}, "warn");
try {
  const signing = createInternalClient(SigningService, mesh.urls.signing!, { timeoutMs: 30_000 });
  const orm = await openDatabase({ url: mesh.databaseUrl, schema: "gateway", entities, migrations, logger });
  const pool = openStatementPool({ url: mesh.databaseUrl, schema: "gateway", max: 4, logger });
  const limiter = new RateLimiter({ pool, leaseTtlMs: 60_000, logger });
  const services = { signing, keySet: new KeySetCache({ signing, logger }) } as unknown as GatewayServices;
  const edge: Stage[] = [
    rateLimitStage({ limiter, upgradeUrl: "http://127.0.0.1/upgrade", anonymousPerMinute: 1_000_000_000, trustedProxyHops: 0, logger }),
    aliasStage({ table: aliasTable, sunset, link: "http://127.0.0.1/v1/openapi.json" }),
  ];
  const start = (stages: Stage[]) =>
    startPublicServer({ host: "127.0.0.1", port: 0, routes: [verifyTokenRoute], stages, services, clock: systemClock, logger, ready: async () => {} });
  const without = await start([parseStage, validateStage, handleStage]);
  const withEdge = await start([parseStage, ...edge, validateStage, handleStage]);

  let sequence = 0;
  const mint = async (count: number): Promise<string[]> => {
    const tokens: string[] = [];
    while (tokens.length < count) {
      const batch = await Promise.all(
        Array.from({ length: 200 }, () =>
          signing.signAttestation({ requestId: `req_${(sequence++).toString(16).padStart(32, "0")}`, verified: true, organizationId: "bench-org", verifiedAt: timestampFromDate(new Date()) }),
        ),
      );
      tokens.push(...batch.map((r) => r.token));
    }
    return tokens;
  };

  const agent = new Agent({ keepAlive: true, maxSockets: inFlight });
  const post = (origin: string, body: string) =>
    new Promise<void>((resolve, reject) => {
      const call = request(new URL("/v1/sdk/verify-token", origin), { method: "POST", agent, headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) } }, (response) => {
        const chunks: Buffer[] = [];
        response.on("data", (c: Buffer) => chunks.push(c));
        response.on("end", () => {
          const result = JSON.parse(Buffer.concat(chunks).toString());
          if (response.statusCode !== 200 || result.data?.data?.valid !== true) reject(new Error(`unexpected answer ${response.statusCode}: ${Buffer.concat(chunks)}`));
          else resolve();
        });
      });
      call.on("error", reject);
      call.end(body);
    });

  // CPU of everything a request costs: this process (the gateway under test and the load), the
  // mesh's processes (signing) and this benchmark's PostgreSQL, so the cost per request can be
  // compared even when other work on the machine skews the throughput.
  const postgresPort = new URL(mesh.databaseUrl).port;
  const costedProcesses = (): string[] => {
    const processes = readdirSync("/proc").filter((pid) => /^\d+$/.test(pid));
    const parentOf = (pid: string) => {
      try {
        const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
        return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]!;
      } catch {
        return "";
      }
    };
    const postmaster = processes.find((pid) => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").join(" ").includes(`-p ${postgresPort} `);
      } catch {
        return false;
      }
    });
    const own = String(process.pid);
    return processes.filter((pid) => pid === own || pid === postmaster || [own, postmaster].includes(parentOf(pid)));
  };
  const cpuMicros = (pids: string[]) =>
    pids.reduce((sum, pid) => {
      try {
        const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
        const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
        return sum + (Number(fields[11]) + Number(fields[12])) * 10_000;
      } catch {
        return sum;
      }
    }, 0);

  const run = async (origin: string, concurrency: number, durationMs: number, tokens: string[]) => {
    let used = 0;
    const pids = costedProcesses();
    const cpuBefore = cpuMicros(pids);
    const ops = await measureThroughput(concurrency, durationMs, async () => {
      const token = tokens[used++];
      if (!token) throw new Error("ran out of fresh tokens");
      await post(origin, JSON.stringify({ token }));
    });
    return { ops, cpuPerRequest: (cpuMicros(pids) - cpuBefore) / used };
  };

  // Warm both (JIT, connection pools, the plpgsql plan), then alternate.
  await run(without.url, inFlight, 1000, await mint(6000));
  await run(withEdge.url, inFlight, 1000, await mint(6000));
  const off: number[] = [];
  const on: number[] = [];
  const offCpu: number[] = [];
  const onCpu: number[] = [];
  for (let round = 0; round < rounds; round++) {
    const a = await run(without.url, inFlight, roundMs, await mint(20_000));
    const b = await run(withEdge.url, inFlight, roundMs, await mint(20_000));
    off.push(a.ops);
    offCpu.push(a.cpuPerRequest);
    on.push(b.ops);
    onCpu.push(b.cpuPerRequest);
  }

  // Latency one request at a time, and the limiter's own decision.
  const latency = async (origin: string, tokens: string[]) => {
    const samples: number[] = [];
    for (const token of tokens) {
      const started = performance.now();
      await post(origin, JSON.stringify({ token }));
      samples.push(performance.now() - started);
    }
    return median(samples);
  };
  const offLatency = await latency(without.url, await mint(400));
  const onLatency = await latency(withEdge.url, await mint(400));
  const takes: number[] = [];
  const plan = { tier: { scope: "ip", buckets: [{ name: "per_minute" as const, limit: 1_000_000_000, windowSeconds: 60, perClientIp: true }], developmentError: false, reportsByDefault: false }, subject: "ip:bench", clientIp: "bench" };
  for (let i = 0; i < 400; i++) {
    const started = performance.now();
    await limiter.take(plan, new Date());
    takes.push(performance.now() - started);
  }

  agent.destroy();
  await Promise.all([without.stop(), withEdge.stop()]);
  await pool.end();
  await orm.close();
  const offOps = median(off);
  const onOps = median(on);
  console.log(
    JSON.stringify({
      name: "gateway-edge",
      ratio: onOps / offOps,
      with_edge_ops: Math.round(onOps),
      without_edge_ops: Math.round(offOps),
      rounds: { with_edge: on.map(Math.round), without_edge: off.map(Math.round) },
      cpu_us_per_request: { with_edge: Math.round(median(onCpu)), without_edge: Math.round(median(offCpu)) },
      route: "POST /v1/sdk/verify-token",
      in_flight: inFlight,
      latency_ms_p50: { with_edge: round2(onLatency), without_edge: round2(offLatency), added: round2(onLatency - offLatency) },
      limiter_take_ms_p50: round2(median(takes)),
    }),
  );
} finally {
  await mesh.stop();
}

function round2(n: number): number {
  return Math.round(n * 100) / 100;
}
