import { webcrypto } from "node:crypto";
import { loadavg } from "node:os";
import { createInternalClient } from "@svc/platform";
import { SigningService } from "@svc/proto/signing/v1/signing_pb.js";
import { startVerifyTokenLoad } from "../../gateway/bench/verify-token-load-thread.ts";
import { median, startBenchMesh } from "./bench-infrastructure.ts";
import { cpuMicrosSince, cpuReading, mintAttestations, postgresProcesses } from "./process-cpu.ts";

/**
 * The server side's CPU per POST /v1/sdk/verify-token against the CPU of one raw crypto.subtle.verify
 * of the same kind of token, both measured in this run. Throughput on two shared cores measures the
 * machine (the comparator alone keeps both busy), CPU time does not: it is read from /proc for the
 * gateway, signing and PostgreSQL (the postmaster and its children) over each round and divided by the
 * requests answered in it. The load generator runs on a thread of this process, which is not counted.
 * The raw verify's CPU is this process's own (process.cpuUsage) while it verifies and nothing else runs here.
 * Each round measures both, and the ratio is the median of the rounds' ratios.
 */
const inFlight = 16;
const roundMs = 2000;
const rounds = 5;
/** Fresh tokens for one round: more than a round can use at the best rate seen here (about 3,000/s). */
const tokensPerRound = 8_000;
const rawVerifies = 20_000;
type Part = "gateway" | "signing" | "postgres";
const parts: Part[] = ["gateway", "signing", "postgres"];

const mesh = await startBenchMesh(["signing"]);
try {
  const signing = createInternalClient(SigningService, mesh.urls.signing!, { timeoutMs: 30_000 });
  const mint = (count: number) => mintAttestations(signing, count);

  const { keys } = await (await fetch(`${mesh.gatewayUrl}/.well-known/jwks.json`)).json();
  const publicKey = await webcrypto.subtle.importKey("jwk", keys[0], { name: "ECDSA", namedCurve: "P-256" }, false, [
    "verify",
  ]);
  const rawCpuPerVerify = async (tokens: string[]) => {
    const segments = tokens.map((t) => t.split("."));
    const before = process.cpuUsage();
    let next = 0;
    await Promise.all(
      Array.from({ length: inFlight }, async () => {
        while (next < rawVerifies) {
          const [header, payload, signature] = segments[next++ % segments.length]!;
          const ok = await webcrypto.subtle.verify(
            { name: "ECDSA", hash: "SHA-256" },
            publicKey,
            Buffer.from(signature!, "base64url"),
            Buffer.from(`${header}.${payload}`),
          );
          if (!ok) throw new Error("raw verification failed");
        }
      }),
    );
    const used = process.cpuUsage(before);
    return (used.user + used.system) / rawVerifies;
  };

  /**
   * The processes whose CPU a request costs, by part: PostgreSQL is its postmaster and every backend,
   * listed again at the end of a round, so a backend that started during it counts too.
   */
  const serverProcesses = (): Record<Part, string[]> => ({
    gateway: [String(mesh.pid("gateway"))],
    signing: [String(mesh.pid("signing"))],
    postgres: postgresProcesses(mesh.databaseUrl),
  });

  const load = startVerifyTokenLoad();
  const ask = load.ask;
  const round = async (durationMs: number, tokens: string[]) => {
    await ask({ kind: "load", tokens });
    const started = serverProcesses();
    const before = Object.fromEntries(parts.map((part) => [part, cpuReading(started[part])])) as Record<
      Part,
      Map<string, number>
    >;
    const report = await ask({ kind: "run", origin: mesh.gatewayUrl, inFlight, durationMs });
    if (report.kind !== "ran")
      throw new Error(`load generator: ${report.kind === "failed" ? report.message : report.kind}`);
    const ended = serverProcesses();
    const perRequest = Object.fromEntries(
      parts.map((part) => [part, cpuMicrosSince(before[part], ended[part]) / report.used]),
    ) as Record<Part, number>;
    return { ops: report.ops, perRequest };
  };

  // Warm up (JIT, connection pools, prepared plans) before anything is counted.
  await round(1000, await mint(6000));
  await rawCpuPerVerify(await mint(2000));
  const measured: { ops: number; perRequest: Record<Part, number>; raw: number }[] = [];
  for (let i = 0; i < rounds; i++) {
    // Each round swaps which of the two goes first, so neither always runs on the machine the other left behind.
    const rawFirst = i % 2 === 1;
    const rawBefore = rawFirst ? await rawCpuPerVerify(await mint(2000)) : undefined;
    const { ops, perRequest } = await round(roundMs, await mint(tokensPerRound));
    measured.push({ ops, perRequest, raw: rawBefore ?? (await rawCpuPerVerify(await mint(2000))) });
  }
  await load.stop();

  const serverCpu = measured.map((m) => parts.reduce((sum, part) => sum + m.perRequest[part], 0));
  const server = median(serverCpu);
  const raw = median(measured.map((m) => m.raw));
  const partCpu = (part: Part) => Math.round(median(measured.map((m) => m.perRequest[part])));
  console.log(
    JSON.stringify({
      name: "verify-token",
      ratio: round2(median(serverCpu.map((cpu, i) => cpu / measured[i]!.raw))),
      server_cpu_us: Math.round(server),
      gateway_cpu_us: partCpu("gateway"),
      signing_cpu_us: partCpu("signing"),
      postgres_cpu_us: partCpu("postgres"),
      raw_verify_cpu_us: Math.round(raw),
      ops: Math.round(median(measured.map((m) => m.ops))),
      in_flight: inFlight,
      rounds: measured.map((m, i) => ({
        ops: Math.round(m.ops),
        server_cpu_us: Math.round(serverCpu[i]!),
        raw_cpu_us: Math.round(m.raw),
      })),
      load_average: loadavg().map(round2),
    }),
  );
} finally {
  await mesh.stop();
}

function round2(n: number): number {
  return Math.round(n * 100) / 100;
}
