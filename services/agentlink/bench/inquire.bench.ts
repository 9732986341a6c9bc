import { createSecretKey, randomUUID } from "node:crypto";
import type { JsonObject } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { connectNats, createLogger, openStatementPool, systemClock } from "@svc/platform";
import { AccountConsoleService, SandboxBehavior } from "@svc/proto/account/v1/account_pb.js";
import { AgentConsoleService } from "@svc/proto/agentlink/v1/agentlink_pb.js";
import { Environment } from "@svc/proto/common/v1/caller_pb.js";
import { ConsoleService } from "@svc/proto/console/v1/console_pb.js";
import pg from "pg";
import { measureThroughput, startBenchMesh } from "../../../test/bench/bench-infrastructure.ts";
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
 */
const clients = 16;
const durationMs = 5000;

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
    outbox: { wake: () => undefined },
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
  const insertOps = await measureThroughput(clients, durationMs, insert);
  const inquireOps = await measureThroughput(clients, durationMs, propose);

  await db.end();
  await statements.end();
  await nc.close();
  console.log(
    JSON.stringify({
      name: "agents-inquire",
      ratio: inquireOps / insertOps,
      inquire_ops: Math.round(inquireOps),
      insert_ops: Math.round(insertOps),
      clients,
    }),
  );
} finally {
  await mesh.stop();
}
