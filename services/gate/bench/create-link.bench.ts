import { randomBytes } from "node:crypto";
import { Agent, request } from "node:http";
import { createClient } from "@connectrpc/connect";
import { createInternalClient, createLogger, openStatementPool, systemClock } from "@svc/platform";
import { CredentialKind, Environment } from "@svc/proto/common/v1/caller_pb.js";
import { ConsoleService, KeyType } from "@svc/proto/console/v1/console_pb.js";
import { GateConsoleService, GateService, GateType } from "@svc/proto/gate/v1/gate_pb.js";
import pg from "pg";
import { measureThroughput, median, startBenchMesh } from "../../../test/bench/bench-infrastructure.ts";
import { cpuMicrosSince, cpuReading, postgresProcesses } from "../../../test/bench/process-cpu.ts";
import { consoleTransport } from "../../../test/harness/console-transport.ts";
import { GateFactsLookup } from "../src/gates/gate-facts.ts";
import { partnerRefs } from "../src/partner-refs.ts";
import { createLink } from "../src/requests/create-link.ts";
import { IdempotentCreates } from "../src/requests/idempotent-creates.ts";
import { RequestWriter } from "../src/requests/request-writer.ts";
import { SessionFactsLookup } from "../src/sessions/session-facts.ts";
import { SessionStore } from "../src/sessions/session-store.ts";

/**
 * create-verification-link against a plain single-row INSERT on the same PostgreSQL: throughput with
 * 16 clients (goal: at least 40%), the median latency with one client (goal: at most 4x the INSERT's),
 * and 16-way contention for one grant token, which must never spend it twice.
 *
 * Measured twice. `ratio`/`median_ratio` are the gate service's whole work for one call, in process
 * against the real database: checking the grant token and creating the request, as CreateVerificationLink
 * does given the token. `gateway_*` are the same operation end to end over HTTP through the gateway
 * (rate limiter, one RPC to gate), which also pays for HTTP and the mesh on the same cores:
 * its throughput is taken in rounds that alternate with the INSERT's (which goes first swaps each round),
 * `gateway_ratio` the median of the rounds' ratios, with the server CPU per operation of each beside it
 * (`gateway_cpu_us`: gateway, gate and PostgreSQL; `insert_cpu_us`: PostgreSQL), read from /proc.
 */
const clients = 16;
const durationMs = 5000;
const gatewayRounds = 5;
const gatewayRoundMs = 2000;
const singleSamples = 500;
const contentionRounds = 30;

const mesh = await startBenchMesh(["signing", "gate"]);
try {
  const transport = consoleTransport(mesh.consoleUrl, mesh.consoleToken);
  const console_ = createClient(ConsoleService, transport);
  const { organizationId } = await console_.createOrganization({ name: "bench" });
  const { key, keyId } = await console_.createKey({
    organizationId,
    environment: Environment.DEVELOPMENT,
    type: KeyType.SECRET,
  });
  // The benchmark sends far more than a development key's tier allows; limits are not what it measures.
  for (const bucket of ["per_minute", "hourly", "daily", "in_flight"])
    await console_.setKeyLimits({ keyId, bucket, limit: 10_000_000 });
  await createClient(GateConsoleService, transport).createGate({
    organizationId,
    environment: Environment.DEVELOPMENT,
    key: "bench",
    type: GateType.HUMAN,
    status: "active",
  });

  const agent = new Agent({ keepAlive: true, maxSockets: clients });
  const post = (path: string, body: unknown, credential: string) =>
    new Promise<{ data?: { data?: Record<string, unknown>; error?: unknown } }>((resolve, reject) => {
      const text = JSON.stringify(body);
      const call = request(
        new URL(`/v1${path}`, mesh.gatewayUrl),
        {
          method: "POST",
          agent,
          headers: {
            authorization: `Bearer ${credential}`,
            "content-type": "application/json",
            "content-length": Buffer.byteLength(text),
          },
        },
        (response) => {
          const chunks: Buffer[] = [];
          response.on("data", (c: Buffer) => chunks.push(c));
          response.on("end", () => resolve(JSON.parse(Buffer.concat(chunks).toString())));
        },
      );
      call.on("error", reject);
      call.end(text);
    });
  // Grant tokens for the measured calls come from gate itself, as the gateway's create-session gets them,
  // so that making thousands of them costs seconds, not a minute of HTTP.
  const gate = createInternalClient(GateService, mesh.urls.gate!, { timeoutMs: 30_000 });
  const caller = {
    organizationId,
    environment: Environment.DEVELOPMENT,
    credentialId: keyId,
    credentialKind: CredentialKind.SECRET_KEY,
  };
  const grants = async (count: number) => {
    const out: string[] = [];
    while (out.length < count)
      out.push(
        ...(await Promise.all(
          Array.from({ length: Math.min(200, count - out.length) }, () =>
            gate.createSession({ caller }).then((session) => session.anchorGrantToken),
          ),
        )),
      );
    return out;
  };
  const grant = async () => {
    const answer = await post("/sdk/create-session", {}, key);
    const token = answer.data?.data?.anchor_grant_token;
    if (typeof token !== "string") throw new Error(`create-session failed: ${JSON.stringify(answer)}`);
    return token;
  };
  const gatewayLink = async (token: string) => {
    const answer = await post("/sdk/create-verification-link", { gate: "bench" }, token);
    if (!answer.data?.data?.request_id) throw new Error(`create-verification-link failed: ${JSON.stringify(answer)}`);
  };

  const db = new pg.Pool({ connectionString: mesh.databaseUrl, max: clients });
  // An idle connection the server dropped is replaced on next use; unheard, its error ended the whole run.
  db.on("error", (error) => process.stderr.write(`bench pool: ${error.message}\n`));
  await db.query(
    "create table bench_insert (id bigserial primary key, request_id text not null, created_at timestamptz not null)",
  );
  const insert = () =>
    db
      .query("insert into bench_insert (request_id, created_at) values ($1, now())", [
        `req_${Math.random().toString(16).slice(2)}`,
      ])
      .then(() => undefined);

  /**
   * One-client medians, taken in turns (one sample of each in every turn, which goes first rotating) so
   * they see the same machine: measured one after the other, the INSERT's own median moved between 0.05
   * and 0.14 ms from run to run with what the machine did between the phases, and the ratio with it.
   */
  const medians = async (samples: number, works: Record<string, () => Promise<void>>) => {
    const times = Object.fromEntries(Object.keys(works).map((name) => [name, [] as number[]]));
    const entries = Object.entries(works);
    for (let i = 0; i < samples; i++) {
      for (const [name, work] of [...entries.slice(i % entries.length), ...entries.slice(0, i % entries.length)]) {
        const started = performance.now();
        await work();
        times[name]!.push(performance.now() - started);
      }
    }
    return Object.fromEntries(Object.entries(times).map(([name, values]) => [name, median(values)]));
  };

  // The gate service's own work, in process: the same modules, statements and database the service uses.
  const logger = createLogger("bench", {}, "warn");
  const statements = openStatementPool({ url: mesh.databaseUrl, schema: "gate", max: clients, logger });
  const refs = partnerRefs(randomBytes(32));
  const sessionFacts = new SessionFactsLookup(statements);
  const sessions = new SessionStore({ db: statements, clock: systemClock, refs, facts: sessionFacts });
  const linkDeps = {
    writer: new RequestWriter(statements),
    sessions: sessionFacts,
    gates: new GateFactsLookup(statements),
    clock: systemClock,
    bus: { subjectPrefix: "svc" },
    refs,
    presenceWindowMs: 600_000,
    idempotent: new IdempotentCreates({ db: statements, refs, gates: new GateFactsLookup(statements) }),
  };
  const keyCaller = {
    organizationId,
    environment: "development" as const,
    credentialId: keyId,
    kind: "secret_key" as const,
  };
  const serviceGrants = async (count: number) => {
    const tokens: string[] = [];
    while (tokens.length < count)
      tokens.push(
        ...(await Promise.all(
          Array.from({ length: Math.min(200, count - tokens.length) }, () =>
            sessions
              .create(keyCaller, { partnerUserId: "", metadata: undefined, allowedGates: [] })
              .then((s) => s.token),
          ),
        )),
      );
    return tokens;
  };
  const serviceLink = async (token: string) => {
    const session = await sessions.forCreate(token, "");
    const input = {
      gate: "bench",
      returnUrl: "",
      mode: "",
      svcUserId: "",
      partnerUserRef: "",
      parentRequestId: "",
      metadata: undefined,
      notarize: false,
      idempotencyToken: "",
    };
    await createLink(linkDeps, { ...keyCaller, credentialId: session.id, kind: "grant_token" }, input, { devices: 0 });
  };
  const fromPool = (tokens: string[]) => {
    let used = 0;
    return () => {
      const token = tokens[used++];
      if (!token) throw new Error("ran out of grant tokens");
      return token;
    };
  };

  // Warm every path (connections, prepared plans, JIT) before measuring.
  for (const token of await grants(200)) await gatewayLink(token);
  for (const token of await serviceGrants(200)) await serviceLink(token);
  for (let i = 0; i < 200; i++) await insert();

  const insertOps = await measureThroughput(clients, durationMs, insert);
  const nextServiceToken = fromPool(await serviceGrants(Math.ceil(insertOps * (durationMs / 1000)) + 2000));
  const serviceOps = await measureThroughput(clients, durationMs, () => serviceLink(nextServiceToken()));

  /** Operations per second and each part's CPU per operation over a round of `task` at 16 clients. */
  const costedRound = async (parts: Record<string, () => string[]>, task: () => Promise<void>) => {
    const before = Object.fromEntries(Object.entries(parts).map(([part, pids]) => [part, cpuReading(pids())]));
    let done = 0;
    const ops = await measureThroughput(clients, gatewayRoundMs, () => task().then(() => void done++));
    const cpuUs = Object.fromEntries(
      Object.entries(parts).map(([part, pids]) => [part, cpuMicrosSince(before[part]!, pids()) / done]),
    );
    return { ops, cpuUs: Object.values(cpuUs).reduce((sum, cpu) => sum + cpu, 0), parts: cpuUs };
  };
  const postgres = () => postgresProcesses(mesh.databaseUrl);
  const meshAndPostgres = {
    gateway: () => [String(mesh.pid("gateway"))],
    gate: () => [String(mesh.pid("gate"))],
    postgres,
  };
  const gatewayArm: { ops: number; cpuUs: number; parts: Record<string, number> }[] = [];
  const insertArm: { ops: number; cpuUs: number }[] = [];
  // A round's tokens: twice what the last round used, so that none runs out and few are left over.
  let tokensNeeded = Math.ceil(serviceOps * (gatewayRoundMs / 1000));
  for (let round = 0; round < gatewayRounds; round++) {
    const nextToken = fromPool(await grants(tokensNeeded));
    const gatewayRound = async () => {
      const measured = await costedRound(meshAndPostgres, () => gatewayLink(nextToken()));
      gatewayArm.push(measured);
      tokensNeeded = Math.ceil(2 * measured.ops * (gatewayRoundMs / 1000)) + 500;
    };
    const insertRound = async () => insertArm.push(await costedRound({ postgres }, insert));
    for (const arm of round % 2 === 0 ? [insertRound, gatewayRound] : [gatewayRound, insertRound]) await arm();
  }
  const gatewayRatio = median(gatewayArm.map((g, round) => g.ops / insertArm[round]!.ops));
  const gatewayOps = median(gatewayArm.map((g) => g.ops));

  const nextSingleService = fromPool(await serviceGrants(singleSamples));
  const nextSingleGateway = fromPool(await grants(singleSamples));
  const single = await medians(singleSamples, {
    service: () => serviceLink(nextSingleService()),
    insert,
    gateway: () => gatewayLink(nextSingleGateway()),
  });
  const [serviceMedianMs, insertMedianMs, gatewayMedianMs] = [single.service!, single.insert!, single.gateway!];

  let doubleSpends = 0;
  for (let round = 0; round < contentionRounds; round++) {
    const token = await grant();
    const answers = await Promise.all(
      Array.from({ length: clients }, () => post("/sdk/create-verification-link", { gate: "bench" }, token)),
    );
    if (answers.filter((a) => a.data?.data?.request_id).length !== 1) doubleSpends++;
  }

  agent.destroy();
  await db.end();
  await statements.end();
  console.log(
    JSON.stringify({
      name: "create-verification-link",
      ratio: serviceOps / insertOps,
      median_ratio: serviceMedianMs / insertMedianMs,
      service_ops: Math.round(serviceOps),
      insert_ops: Math.round(insertOps),
      clients,
      service_median_ms: Number(serviceMedianMs.toFixed(3)),
      insert_median_ms: Number(insertMedianMs.toFixed(3)),
      gateway_ratio: gatewayRatio,
      gateway_median_ratio: gatewayMedianMs / insertMedianMs,
      gateway_ops: Math.round(gatewayOps),
      gateway_insert_ops: Math.round(median(insertArm.map((i) => i.ops))),
      gateway_cpu_us: Math.round(median(gatewayArm.map((g) => g.cpuUs))),
      insert_cpu_us: Math.round(median(insertArm.map((i) => i.cpuUs))),
      ...Object.fromEntries(
        Object.keys(meshAndPostgres).map((part) => [
          `gateway_arm_${part}_cpu_us`,
          Math.round(median(gatewayArm.map((g) => g.parts[part]!))),
        ]),
      ),
      gateway_median_ms: Number(gatewayMedianMs.toFixed(3)),
      contention_rounds: contentionRounds,
      rounds_not_spent_exactly_once: doubleSpends,
    }),
  );
} finally {
  await mesh.stop();
}
