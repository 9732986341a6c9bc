import { createSecretKey, randomUUID } from "node:crypto";
import type { JsonObject } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { connectNats, createLogger, openStatementPool, systemClock } from "@svc/platform";
import { AccountConsoleService, SandboxBehavior } from "@svc/proto/account/v1/account_pb.js";
import { AgentConsoleService } from "@svc/proto/agentlink/v1/agentlink_pb.js";
import { Environment } from "@svc/proto/common/v1/caller_pb.js";
import { ConsoleService } from "@svc/proto/console/v1/console_pb.js";
import pg from "pg";
import { cpuPerOp } from "../../../gateway/sdk/bench/cpu.ts";
import { measureThroughput, median, startBenchMesh } from "../../../test/bench/bench-infrastructure.ts";
import { cpuMicrosSince, cpuReading, postgresProcesses } from "../../../test/bench/process-cpu.ts";
import { consoleTransport } from "../../../test/harness/console-transport.ts";
import { AgentNames } from "../src/agents/agent-naming.ts";
import { settings } from "../src/config.ts";
import { CardWriter } from "../src/proposals/card-writer.ts";
import { inquire, type ProposalContext } from "../src/proposals/inquire.ts";

/**
 * inquire against a plain single-row INSERT on the same PostgreSQL, 16 clients each (goal: at least 40%).
 * Measured as agentlink's whole work for one call, in process against the real database and the modules
 * the service runs: the trust layer, then one statement (batched under load) that reads the agent's status
 * and categories, its card for the request_id and the binding, and writes the card, its audit row and its
 * event in one transaction. The person is named by opaque_id (the preferred identifier), so no
 * account round trip is counted; the running agentlink's outbox relay publishes the events meanwhile.
 *
 * The two run in alternating rounds (which goes first swaps each round) and `ratio` is the median of the
 * rounds' ratios: measured one after the other, each seeing the machine of its own five seconds, the ratio
 * read 0.28 to 0.45. Beside it, each arm's CPU per operation from /proc: this process (the in-process
 * service or the INSERT's client), PostgreSQL and the running agentlink. An inquire round's CPU is read
 * once the relay has published its cards' events, so their cost is the inquire's and none of it falls in
 * the INSERT round that follows.
 */
const clients = 16;
const roundMs = 2000;
const rounds = 7;

const mesh = await startBenchMesh(["signing", "account", "agentlink"]);
try {
  const transport = consoleTransport(mesh.consoleUrl, mesh.consoleToken);
  const { organizationId } = await createClient(ConsoleService, transport).createOrganization({ name: "bench" });
  const agents = createClient(AgentConsoleService, transport);
  const { agent, agentKey } = await agents.registerAgent({
    organizationId,
    environment: Environment.DEVELOPMENT,
    name: "Bench_Bot",
    displayName: "Bench bot",
    categories: ["payments"],
  });
  if (!agent) throw new Error("RegisterAgent answered no agent");
  const { svcUserId } = await createClient(AccountConsoleService, transport).createSandboxHuman({
    environment: Environment.DEVELOPMENT,
    behavior: SandboxBehavior.SILENT,
  });
  const agentCall = async (method: "GET" | "POST", path: string, query = "") => {
    const response = await fetch(`${mesh.gatewayUrl}/v1${path}${query}`, {
      method,
      headers: { authorization: `Bearer ${agentKey}`, "content-type": "application/json" },
      ...(method === "POST" && { body: "{}" }),
    });
    return (await response.json()).data.data as Record<string, string>;
  };
  const { link_code } = await agentCall("POST", "/agent/bind-session");
  await agents.sandboxClaimLinkCode({ svcUserId, linkCode: link_code });
  const { opaque_id } = await agentCall("GET", "/agent/check-binding", `?link_code=${link_code}`);
  if (!opaque_id) throw new Error("the bench person's binding has no opaque_id");

  const logger = createLogger("bench", {}, "warn");
  // As the service wires it (server.ts): the platform's statement pool (the running agentlink applied
  // propose_cards at start), and one agent-name lookup and one card writer shared by every call.
  const statements = openStatementPool({ url: mesh.databaseUrl, schema: "agentlink", max: clients, logger });
  const agentNames = new AgentNames(statements);
  const cards = new CardWriter(statements);
  // Each written card wakes its person's inbox, as in the service.
  const nc = await connectNats({ url: mesh.natsUrl, name: "inquire-bench" });
  const context = (): ProposalContext => ({
    agents: agentNames,
    cards,
    clock: systemClock,
    // The mesh runs with development secrets: the same key the service derives opaque_ids with.
    opaqueIdKey: createSecretKey(settings.opaqueIdKey.default as Buffer),
    account: {
      getHuman: () => Promise.reject(new Error("the bench names its person by opaque_id")),
      findHumanByEmail: () => Promise.reject(new Error("the bench names its person by opaque_id")),
    },
    classifier: undefined,
    bus: { subject: (type) => `events.${type}`, nc, subjectPrefix: "events" },
    outbox: { publishCommitted: async () => true },
    // Its people are no sandbox humans: its cards stay out of the mesh's sandbox sweep.
    deployment: "production",
  });
  const proposal: JsonObject = {
    action: {
      summary_title: "Pay invoice 2231 to Acme Supplies",
      category: "payments",
      summary_detail: { label: "Amount", value: "EUR 120.00" },
    },
    adaptive_card_payload: {
      type: "AdaptiveCard",
      version: "1.5",
      body: [
        { type: "TextBlock", text: "Invoice 2231 from Acme Supplies, due 1 December", wrap: true },
        {
          type: "FactSet",
          facts: [
            { title: "Amount", value: "EUR 120.00" },
            { title: "Payee", value: "Acme Supplies" },
          ],
        },
      ],
    },
  };
  const propose = async () => {
    const { replay } = await inquire(context(), agent.agentId, {
      requestId: randomUUID(),
      opaqueId: opaque_id,
      proposal,
    });
    if (replay) throw new Error("a fresh request_id was answered as a replay");
  };

  const db = new pg.Pool({ connectionString: mesh.databaseUrl, max: clients });
  await db.query(
    "create table bench_insert (id bigserial primary key, request_id uuid not null, created_at timestamptz)",
  );
  const insert = () =>
    db.query("insert into bench_insert (request_id, created_at) values ($1, now())", [randomUUID()]).then(() => {});

  // Warm every path (connections, plans, JIT) before measuring.
  for (let i = 0; i < 200; i++) {
    await propose();
    await insert();
  }
  const unrelayed = async () =>
    (await db.query<{ n: number }>("select count(*)::int as n from agentlink.outbox where published_at is null"))
      .rows[0]!.n;
  const relayed = async () => {
    const deadline = Date.now() + 60_000;
    while ((await unrelayed()) > 0) {
      if (Date.now() > deadline) throw new Error("agentlink's relay left events unpublished for 60 s");
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };
  await relayed();

  const processes = {
    postgres: () => postgresProcesses(mesh.databaseUrl),
    agentlink: () => [String(mesh.pid("agentlink"))],
  };
  const parts = ["bench", "postgres", "agentlink"] as const;
  /**
   * Operations per second over a round of `task` at 16 clients, and each part's CPU per operation, read
   * once `settled` says the round's work is done. This process's own CPU comes from process.cpuUsage with
   * a collection before and after, so each arm pays for its own garbage.
   */
  const costedRound = async (task: () => Promise<void>, settled: () => Promise<void>) => {
    const before = { postgres: cpuReading(processes.postgres()), agentlink: cpuReading(processes.agentlink()) };
    let done = 0;
    let ops = 0;
    const benchUs = await cpuPerOp(async () => {
      ops = await measureThroughput(clients, roundMs, () => task().then(() => void done++));
      await settled();
    }, 1);
    const cpuUs = {
      bench: benchUs / done,
      postgres: cpuMicrosSince(before.postgres, processes.postgres()) / done,
      agentlink: cpuMicrosSince(before.agentlink, processes.agentlink()) / done,
    };
    return { ops, cpuUs, totalCpuUs: parts.reduce((sum, part) => sum + cpuUs[part], 0) };
  };
  type Round = Awaited<ReturnType<typeof costedRound>>;
  const inquireArm: Round[] = [];
  const insertArm: Round[] = [];
  for (let round = 0; round < rounds; round++) {
    const arms = [
      async () => inquireArm.push(await costedRound(propose, relayed)),
      async () => insertArm.push(await costedRound(insert, async () => {})),
    ];
    for (const arm of round % 2 === 0 ? arms : arms.reverse()) await arm();
  }
  const ratios = inquireArm.map((inquired, round) => inquired.ops / insertArm[round]!.ops);

  await db.end();
  await statements.end();
  await nc.close();
  const middle = (arm: Round[], value: (round: Round) => number) => Math.round(median(arm.map(value)));
  console.log(
    JSON.stringify({
      name: "agents-inquire",
      ratio: Number(median(ratios).toFixed(3)),
      min_round_ratio: Number(Math.min(...ratios).toFixed(3)),
      max_round_ratio: Number(Math.max(...ratios).toFixed(3)),
      inquire_ops: middle(inquireArm, (r) => r.ops),
      insert_ops: middle(insertArm, (r) => r.ops),
      inquire_cpu_us: middle(inquireArm, (r) => r.totalCpuUs),
      ...Object.fromEntries(parts.map((part) => [`inquire_${part}_cpu_us`, middle(inquireArm, (r) => r.cpuUs[part])])),
      insert_cpu_us: middle(insertArm, (r) => r.totalCpuUs),
      ...Object.fromEntries(parts.map((part) => [`insert_${part}_cpu_us`, middle(insertArm, (r) => r.cpuUs[part])])),
      cpu_ratio: Number(median(inquireArm.map((r, round) => r.totalCpuUs / insertArm[round]!.totalCpuUs)).toFixed(2)),
      clients,
      rounds,
    }),
  );
} finally {
  await mesh.stop();
}
