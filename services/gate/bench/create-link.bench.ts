import { Agent, request } from "node:http";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import pg from "pg";
import { Environment } from "@svc/proto/common/v1/caller_pb.js";
import { ConsoleService, KeyType } from "@svc/proto/console/v1/console_pb.js";
import { GateConsoleService, GateType } from "@svc/proto/gate/v1/gate_pb.js";
import { measureThroughput, startBenchMesh } from "../../../test/bench/bench-infrastructure.ts";

/**
 * POST /v1/sdk/create-verification-link through the real gateway and gate service against a plain
 * single-row INSERT on the same PostgreSQL: throughput with 16 clients (goal: at least 40%), the
 * median latency with one client (goal: at most 4x the INSERT's), and 16-way contention for one grant
 * token, which must never spend it twice.
 */
const clients = 16;
const durationMs = 5000;
const singleSamples = 300;
const contentionRounds = 30;

const mesh = await startBenchMesh(["signing", "gate"]);
try {
  const transport = createConnectTransport({ baseUrl: mesh.consoleUrl, httpVersion: "2" });
  const console_ = createClient(ConsoleService, transport);
  const { organizationId } = await console_.createOrganization({ name: "bench" });
  const { key, keyId } = await console_.createKey({ organizationId, environment: Environment.DEVELOPMENT, type: KeyType.SECRET });
  // The benchmark sends far more than a development key's tier allows; limits are not what it measures.
  for (const bucket of ["per_minute", "hourly", "daily", "in_flight"]) await console_.setKeyLimits({ keyId, bucket, limit: 10_000_000 });
  await createClient(GateConsoleService, transport).createGate({ organizationId, environment: Environment.DEVELOPMENT, key: "bench", type: GateType.HUMAN, status: "active" });

  const agent = new Agent({ keepAlive: true, maxSockets: clients });
  const post = (path: string, body: unknown, credential: string) =>
    new Promise<{ data?: { data?: Record<string, unknown>; error?: unknown } }>((resolve, reject) => {
      const text = JSON.stringify(body);
      const call = request(new URL(`/v1${path}`, mesh.gatewayUrl), { method: "POST", agent, headers: { authorization: `Bearer ${credential}`, "content-type": "application/json", "content-length": Buffer.byteLength(text) } }, (response) => {
        const chunks: Buffer[] = [];
        response.on("data", (c: Buffer) => chunks.push(c));
        response.on("end", () => resolve(JSON.parse(Buffer.concat(chunks).toString())));
      });
      call.on("error", reject);
      call.end(text);
    });
  const grant = async () => {
    const answer = await post("/sdk/create-session", {}, key);
    const token = answer.data?.data?.anchor_grant_token;
    if (typeof token !== "string") throw new Error(`create-session failed: ${JSON.stringify(answer)}`);
    return token;
  };
  const grants = async (count: number) => {
    const out: string[] = [];
    while (out.length < count) out.push(...(await Promise.all(Array.from({ length: Math.min(100, count - out.length) }, grant))));
    return out;
  };
  const createLink = async (token: string) => {
    const answer = await post("/sdk/create-verification-link", { gate: "bench" }, token);
    if (!answer.data?.data?.request_id) throw new Error(`create-verification-link failed: ${JSON.stringify(answer)}`);
  };

  const db = new pg.Pool({ connectionString: mesh.databaseUrl, max: clients });
  await db.query("create table bench_insert (id bigserial primary key, request_id text not null, created_at timestamptz not null)");
  const insert = () => db.query("insert into bench_insert (request_id, created_at) values ($1, now())", [`req_${Math.random().toString(16).slice(2)}`]).then(() => undefined);

  const median = async (samples: number, work: () => Promise<void>) => {
    const times: number[] = [];
    for (let i = 0; i < samples; i++) {
      const started = performance.now();
      await work();
      times.push(performance.now() - started);
    }
    return times.sort((a, b) => a - b)[Math.floor(times.length / 2)]!;
  };

  // Warm both paths (connections, prepared plans, JIT) before measuring.
  for (const token of await grants(200)) await createLink(token);
  for (let i = 0; i < 200; i++) await insert();

  const insertOps = await measureThroughput(clients, durationMs, insert);
  const pool = await grants(Math.ceil(insertOps * (durationMs / 1000)) + 2000);
  let used = 0;
  const linkOps = await measureThroughput(clients, durationMs, async () => {
    const token = pool[used++];
    if (!token) throw new Error("ran out of grant tokens");
    await createLink(token);
  });

  const singleTokens = await grants(singleSamples);
  let single = 0;
  const linkMedianMs = await median(singleSamples, () => createLink(singleTokens[single++]!));
  const insertMedianMs = await median(singleSamples, insert);

  let doubleSpends = 0;
  for (let round = 0; round < contentionRounds; round++) {
    const token = await grant();
    const answers = await Promise.all(Array.from({ length: clients }, () => post("/sdk/create-verification-link", { gate: "bench" }, token)));
    if (answers.filter((a) => a.data?.data?.request_id).length !== 1) doubleSpends++;
  }

  agent.destroy();
  await db.end();
  console.log(
    JSON.stringify({
      name: "create-verification-link",
      ratio: linkOps / insertOps,
      link_ops: Math.round(linkOps),
      insert_ops: Math.round(insertOps),
      clients,
      median_ratio: linkMedianMs / insertMedianMs,
      link_median_ms: Number(linkMedianMs.toFixed(3)),
      insert_median_ms: Number(insertMedianMs.toFixed(3)),
      contention_rounds: contentionRounds,
      rounds_not_spent_exactly_once: doubleSpends,
    }),
  );
} finally {
  await mesh.stop();
}
