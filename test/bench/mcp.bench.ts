import { randomUUID } from "node:crypto";
import { Agent, request } from "node:http";
import { createClient } from "@connectrpc/connect";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { consoleTransport } from "@svc/local-mesh/console-client";
import { AgentConsoleService } from "@svc/proto/agentlink/v1/agentlink_pb.js";
import { Environment } from "@svc/proto/common/v1/caller_pb.js";
import { ConsoleService } from "@svc/proto/console/v1/console_pb.js";
import { median, startBenchMesh } from "./bench-infrastructure.ts";
import { cpuMicrosSince, cpuReading, postgresProcesses } from "./process-cpu.ts";

/**
 * A tool call through the MCP server at /mcp against the same operation through its JSON route: `check_request`
 * against `GET /v1/agentlink/check-status`, both for a request_id the agent never used (agentlink reads and answers
 * 404, a refusal both carry). Server CPU (gateway, agentlink, PostgreSQL, read from /proc) per call. Each round
 * runs the three arms one after another, each round in another order (so that no arm always follows the same
 * one and pays for what it left, a collection or a vacuum); `ratio` = MCP (revision 2026-07-28) / JSON and
 * `legacy_ratio` the same in the 2025-11-25 revision are the medians of the rounds' ratios (goal: both at most
 * 1.5). Calls rotate over enough agents that no agent's per-minute limit refuses one.
 */
const inFlight = 8;
const callsPerRound = 900;
const rounds = 5;
const warmUpCalls = 600;
/**
 * Enough agents that none meets the agent tier's 120 calls a minute even if the whole run took one minute
 * (on a quiet machine it takes about two): 100 agents were refused in one of three quiet runs.
 */
const agentsCount = Math.ceil((3 * (warmUpCalls + rounds * callsPerRound)) / 100);

const round2 = (n: number) => Math.round(n * 100) / 100;

const mesh = await startBenchMesh(["signing", "account", "agentlink"]);
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
  const modern = await Promise.all(keys.map((key) => connect(key, "2026-07-28")));
  const legacy = await Promise.all(keys.map((key) => connect(key, "2025-11-25")));
  const checkRequest = (clients: Client[]) => async (i: number) => {
    const answer = await (clients[i % clients.length] as Client).callTool({
      name: "check_request",
      arguments: { request_id: randomUUID() },
    });
    if ((answer.structuredContent as { error?: { statusCode?: number } }).error?.statusCode !== 404)
      throw new Error(`check_request: ${JSON.stringify(answer)}`);
  };

  const serverProcesses = () => [
    String(mesh.pid("gateway")),
    String(mesh.pid("agentlink")),
    ...postgresProcesses(mesh.databaseUrl),
  ];
  /** Server CPU in µs per call of `call`, `callsPerRound` calls with `inFlight` at once. */
  const cpuPerCall = async (call: (i: number) => Promise<void>, calls = callsPerRound) => {
    const before = cpuReading(serverProcesses());
    let next = 0;
    await Promise.all(
      Array.from({ length: inFlight }, async () => {
        while (next < calls) await call(next++);
      }),
    );
    return cpuMicrosSince(before, serverProcesses()) / calls;
  };
  const json = (i: number) => checkStatus(keys[i % keys.length] as string);
  const arms = { json, modern: checkRequest(modern), legacy: checkRequest(legacy) };

  // Warm up (JIT, pools, prepared plans, the agent-key cache) before anything is counted.
  for (const arm of Object.values(arms)) await cpuPerCall(arm, warmUpCalls);
  const names = Object.keys(arms) as (keyof typeof arms)[];
  const measured: Record<keyof typeof arms, number>[] = [];
  for (let r = 0; r < rounds; r++) {
    const round = { json: 0, modern: 0, legacy: 0 };
    for (const name of [...names.slice(r % names.length), ...names.slice(0, r % names.length)])
      round[name] = await cpuPerCall(arms[name]);
    measured.push(round);
  }
  await Promise.all([...modern, ...legacy].map((client) => client.close()));

  const ratios = measured.map((m) => m.modern / m.json);
  const legacyRatios = measured.map((m) => m.legacy / m.json);
  console.log(
    JSON.stringify({
      name: "mcp-tool-call",
      ratio: round2(median(ratios)),
      legacy_ratio: round2(median(legacyRatios)),
      json_cpu_us_per_call: Math.round(median(measured.map((m) => m.json))),
      mcp_cpu_us_per_call: Math.round(median(measured.map((m) => m.modern))),
      legacy_mcp_cpu_us_per_call: Math.round(median(measured.map((m) => m.legacy))),
      in_flight: inFlight,
      calls_per_round: callsPerRound,
      rounds: measured.map((m) => ({
        json: Math.round(m.json),
        modern: Math.round(m.modern),
        legacy: Math.round(m.legacy),
      })),
    }),
  );
} finally {
  await mesh.stop();
}
