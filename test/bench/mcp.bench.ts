import { randomUUID } from "node:crypto";
import { Agent, request } from "node:http";
import { join } from "node:path";
import { createClient } from "@connectrpc/connect";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { consoleTransport } from "@svc/local-mesh/console-client";
import type { Mesh, MeshOptions, ServiceName } from "@svc/local-mesh/mesh";
import { AgentConsoleService } from "@svc/proto/agentlink/v1/agentlink_pb.js";
import { Environment } from "@svc/proto/common/v1/caller_pb.js";
import { ConsoleService } from "@svc/proto/console/v1/console_pb.js";
import { checkoutAt } from "./baseline-checkout.ts";
import { startBenchMesh } from "./bench-infrastructure.ts";
import { cpuRatio, cpuSince, threadCpu } from "./mesh-arms.ts";
import { postgresProcesses, withChildren } from "./process-cpu.ts";

/**
 * A tool call through the MCP server at /mcp against the same operation through its JSON route: `check_request`
 * against `GET /v1/agentlink/check-status`, both for a request_id the agent never used (agentlink reads and answers
 * 404, a refusal both carry). Server CPU per call is the on-CPU time of every mesh process's threads and of
 * PostgreSQL's, from their schedstat (nanoseconds; the 10 ms ticks of /proc/<pid>/stat are several percent of a
 * short run), with this process, the load generator, left out.
 *
 * The machine's load moves within seconds and drags the CPU a call costs with it (one arm's rounds read from
 * 1,867 to 3,900 µs in one run, and runs of 150 calls one after another from 1,100 to 4,900 µs), so each arm is
 * measured at the same moments as the JSON route: a round is five cycles of slices of 30 calls in a mirrored
 * order (A B C C B A, rotated each round), each arm's CPU summed over its ten slices, so that every arm's share of
 * the round is spread over the same instants and a burst of load weighs on all three alike.
 * `ratio` = MCP (revision 2026-07-28) / JSON and `legacy_ratio` the same in the 2025-11-25 revision are the
 * medians of the rounds' ratios (goal: both at most 1.5), with their interquartile ranges. Calls rotate over
 * enough agents that no agent's per-minute limit refuses one.
 *
 * SVC_BENCH_BASELINE=REF runs the same method against the mesh of commit REF (`checkoutAt`), to see what a
 * change between the two costs.
 */
const inFlight = 8;
const callsPerSlice = 30;
const cyclesPerRound = 5;
const callsPerArmPerRound = 2 * callsPerSlice * cyclesPerRound;
const rounds = 15;
const warmUpCalls = 600;
/**
 * Enough agents that none meets the agent tier's 120 calls a minute even if the whole run took one minute
 * (on a quiet machine it takes about two): 100 agents were refused in one of three quiet runs.
 */
const agentsCount = Math.ceil((3 * (3 * warmUpCalls + rounds * 3 * callsPerArmPerRound)) / 100);

const baselineRef = process.env.SVC_BENCH_BASELINE;
const baseline = baselineRef === undefined ? undefined : checkoutAt(baselineRef);
const startMesh =
  baseline === undefined
    ? undefined
    : (
        (await import(join(baseline.root, "deploy/local/src/mesh.ts"))) as {
          startMesh(options: MeshOptions): Promise<Mesh>;
        }
      ).startMesh;

const mesh = await startBenchMesh(["signing", "account", "agentlink"], { startMesh });
try {
  const transport = consoleTransport(mesh.consoleUrl, mesh.consoleToken);
  const { organizationId } = await createClient(ConsoleService, transport).createOrganization({ name: "Bench" });
  const agents = createClient(AgentConsoleService, transport);
  const keys = await Promise.all(
    Array.from({ length: agentsCount }, async (_, i) => {
      const registered = await agents.registerAgent({
        organizationId,
        environment: Environment.DEVELOPMENT,
        name: `Mcp_Bench_${i}`,
        categories: ["travel"],
      });
      return registered.agentKey;
    }),
  );

  const keepAlive = new Agent({ keepAlive: true, maxSockets: inFlight });
  const checkStatus = (key: string) =>
    new Promise<void>((resolve, reject) => {
      const url = new URL(`/v1/agentlink/check-status?request_id=${randomUUID()}`, mesh.gatewayUrl);
      request(url, { agent: keepAlive, headers: { authorization: `Bearer ${key}` } }, (response) => {
        const chunks: Buffer[] = [];
        response.on("data", (chunk: Buffer) => chunks.push(chunk));
        response.on("end", () => {
          const body = JSON.parse(Buffer.concat(chunks).toString());
          if (body.data?.error?.statusCode !== 404) reject(new Error(`check-status: ${JSON.stringify(body)}`));
          else resolve();
        });
      })
        .on("error", reject)
        .end();
    });

  const connect = async (key: string, era: "2026-07-28" | "2025-11-25") => {
    const client = new Client(
      { name: "bench", version: "1.0.0" },
      era === "2026-07-28" ? { versionNegotiation: { mode: { pin: era } } } : {},
    );
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${mesh.gatewayUrl}/mcp`), {
        authProvider: { token: async () => key },
      }),
    );
    return client;
  };
  /** Clients of every agent, 16 connecting at a time: hundreds at once met a 503 on a loaded machine. */
  const connectAll = async (era: "2026-07-28" | "2025-11-25") => {
    const clients: Client[] = [];
    for (let at = 0; at < keys.length; at += 16)
      clients.push(...(await Promise.all(keys.slice(at, at + 16).map((key) => connect(key, era)))));
    return clients;
  };
  const modern = await connectAll("2026-07-28");
  const legacy = await connectAll("2025-11-25");
  const checkRequest = (clients: Client[]) => async (i: number) => {
    const answer = await (clients[i % clients.length] as Client).callTool({
      name: "check_request",
      arguments: { request_id: randomUUID() },
    });
    if ((answer.structuredContent as { error?: { statusCode?: number } }).error?.statusCode !== 404)
      throw new Error(`check_request: ${JSON.stringify(answer)}`);
  };

  const serverProcesses = () => [
    ...withChildren(
      (Object.keys(mesh.urls) as ServiceName[]).flatMap((name) => {
        const pid = mesh.pid(name);
        return pid === undefined ? [] : [String(pid)];
      }),
    ),
    ...postgresProcesses(mesh.databaseUrl),
  ];
  /** Every call's number, so that calls rotate over all agents however short a slice is. */
  let turn = 0;
  /** Server CPU in µs of `calls` calls of `call`, `inFlight` at once. */
  const cpuOf = async (call: (i: number) => Promise<void>, calls: number) => {
    const before = threadCpu(serverProcesses());
    let next = 0;
    await Promise.all(
      Array.from({ length: inFlight }, async () => {
        while (next++ < calls) await call(turn++);
      }),
    );
    return cpuSince(before, serverProcesses());
  };
  const json = (i: number) => checkStatus(keys[i % keys.length] as string);
  const arms = { json, modern: checkRequest(modern), legacy: checkRequest(legacy) };

  // Warm up (JIT, pools, prepared plans, the agent-key cache) before anything is counted.
  for (const arm of Object.values(arms)) await cpuOf(arm, warmUpCalls);
  const names = Object.keys(arms) as (keyof typeof arms)[];
  const measured: Record<keyof typeof arms, number>[] = [];
  for (let r = 0; r < rounds; r++) {
    const round = { json: 0, modern: 0, legacy: 0 };
    const order = [...names.slice(r % names.length), ...names.slice(0, r % names.length)];
    for (let cycle = 0; cycle < cyclesPerRound; cycle++)
      for (const name of [...order, ...[...order].reverse()]) round[name] += await cpuOf(arms[name], callsPerSlice);
    measured.push(round);
    process.stderr.write(
      `round ${r + 1} of ${rounds}: ${names.map((name) => `${name} ${Math.round(round[name] / callsPerArmPerRound)} µs/call`).join(", ")}\n`,
    );
  }
  await Promise.all([...modern, ...legacy].map((client) => client.close()));

  const perCall = (arm: keyof typeof arms) => measured.map((m) => ({ cpuUsPerOp: m[arm] / callsPerArmPerRound }));
  const modernRatio = cpuRatio(perCall("modern"), perCall("json"));
  const legacyRatio = cpuRatio(perCall("legacy"), perCall("json"));
  console.log(
    JSON.stringify({
      name: "mcp-tool-call",
      ratio: modernRatio.ratio,
      ratio_iqr: modernRatio.ratio_iqr,
      legacy_ratio: legacyRatio.ratio,
      legacy_ratio_iqr: legacyRatio.ratio_iqr,
      json_cpu_us_per_call: modernRatio.under_cpu_us,
      mcp_cpu_us_per_call: modernRatio.over_cpu_us,
      legacy_mcp_cpu_us_per_call: legacyRatio.over_cpu_us,
      round_ratios: modernRatio.round_ratios,
      legacy_round_ratios: legacyRatio.round_ratios,
      ...(baseline === undefined ? {} : { mesh_of: `${baselineRef} (${baseline.commit.slice(0, 12)})` }),
      in_flight: inFlight,
      calls_per_arm_per_round: callsPerArmPerRound,
      calls_per_slice: callsPerSlice,
      rounds,
    }),
  );
} finally {
  await mesh.stop();
}
