import { Agent, request } from "node:http";
import { fromBinary } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { connect } from "@nats-io/transport-node";
import { consoleTransport } from "@svc/local-mesh/console-client";
import { createInternalClient, notificationSubject } from "@svc/platform";
import { AccountConsoleService, SandboxBehavior } from "@svc/proto/account/v1/account_pb.js";
import { AgentConsoleService, AgentService } from "@svc/proto/agentlink/v1/agentlink_pb.js";
import { CardLeftQueueSchema } from "@svc/proto/agentlink/v1/card_watch_pb.js";
import { Environment } from "@svc/proto/common/v1/caller_pb.js";
import { ConsoleService } from "@svc/proto/console/v1/console_pb.js";
import { startBenchMesh } from "./bench-infrastructure.ts";

/**
 * A quorum card's resolution against a card to one person, through the real gateway, agentlink,
 * signing and NATS, in alternating rounds of the same run. Each round holds the agent's check-status
 * long-poll, then the deciding confirm (a silent sandbox human's, through agentlink's Confirm as the app's
 * confirm calls it; a 3-approver card, quorum 2, gets its first approval beforehand). `resolve_p99_ms` is
 * the 99th percentile from the deciding commit (agentlink's notification, heard by this process as the
 * gateway hears it) to the long-poll's answer; `ratio` = the quorum card's over the single card's (goal:
 * at most 1.5). `from_confirm_p99_ms` also counts the confirm itself (the quorum card's proof is signed
 * under its row lock). Run: node test/bench/quorum.bench.ts [rounds, default 300]
 */
const rounds = Number(process.argv[2] ?? 300);
const warmUp = 20;
/** Agents taking turns, so that no agent key meets its per-minute limit. */
const agentCount = Math.ceil((rounds + warmUp) / 10);

const mesh = await startBenchMesh(["signing", "account", "agentlink"]);
const nc = await connect({ servers: mesh.natsUrl });
try {
  const transport = consoleTransport(mesh.consoleUrl, mesh.consoleToken);
  const { organizationId } = await createClient(ConsoleService, transport).createOrganization({ name: "Bench" });
  const humans = createClient(AccountConsoleService, transport);
  const agents = createClient(AgentConsoleService, transport);
  const agentlink = createInternalClient(AgentService, mesh.urls.agentlink as string, { timeoutMs: 30_000 });
  const keepAlive = new Agent({ keepAlive: true });
  const call = (method: "GET" | "POST", path: string, input: Record<string, unknown>, agentKey: string) =>
    new Promise<{ body: Record<string, unknown>; at: number }>((resolve, reject) => {
      const url = new URL(`/v1${path}`, mesh.gatewayUrl);
      if (method === "GET") for (const [k, v] of Object.entries(input)) url.searchParams.set(k, String(v));
      const body = method === "POST" ? JSON.stringify(input) : undefined;
      const headers: Record<string, string | number> = { authorization: `Bearer ${agentKey}` };
      if (body !== undefined)
        Object.assign(headers, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
      const sent = request(url, { method, agent: keepAlive, headers }, (response) => {
        const chunks: Buffer[] = [];
        response.on("data", (c: Buffer) => chunks.push(c));
        response.on("end", () => {
          const at = performance.now();
          const parsed = JSON.parse(Buffer.concat(chunks).toString());
          if (response.statusCode !== 200 || parsed.data?.error)
            reject(new Error(`${method} ${path}: ${response.statusCode} ${Buffer.concat(chunks)}`));
          else resolve({ body: parsed.data?.data ?? parsed.data, at });
        });
      });
      sent.on("error", reject);
      sent.end(body);
    });

  /** Silent sandbox humans (nobody answers for them), bound to every agent. */
  const people = await Promise.all(
    Array.from(
      { length: 3 },
      async () =>
        (await humans.createSandboxHuman({ environment: Environment.DEVELOPMENT, behavior: SandboxBehavior.SILENT }))
          .svcUserId,
    ),
  );
  const team = await Promise.all(
    Array.from({ length: agentCount }, async (_, i) => {
      const { agentKey } = await agents.registerAgent({
        organizationId,
        environment: Environment.DEVELOPMENT,
        name: `Quorum_${i}`,
        categories: ["deploys"],
      });
      const opaqueIds: string[] = [];
      for (const svcUserId of people) {
        const { link_code: linkCode } = (await call("POST", "/agent/bind-session", {}, agentKey)).body;
        await agents.sandboxClaimLinkCode({ svcUserId, linkCode: linkCode as string });
        opaqueIds.push(
          (await call("GET", "/agent/check-binding", { link_code: linkCode }, agentKey)).body.opaque_id as string,
        );
      }
      return { agentKey, opaqueIds };
    }),
  );
  const [first, second] = people as [string, string];

  const heardAt = new Map<string, number>();
  nc.subscribe(notificationSubject("events", "agentlink.card_left_queue"), {
    callback: (_error, message) => {
      heardAt.set(fromBinary(CardLeftQueueSchema, message.data).requestId, performance.now());
    },
  });
  const approve = (svcUserId: string, cardId: string) =>
    agentlink.confirm({ svcUserId, decisions: [{ cardId, verdict: "approve" }] });
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
  const action = { summary_title: "Deploy release 4.2 to production", category: "deploys" };

  /** One round: the card, its held long-poll, the deciding confirm; the two latencies. */
  async function round(asker: (typeof team)[number], quorum: boolean) {
    const requestId = crypto.randomUUID();
    const target = quorum ? { approvers: asker.opaqueIds, quorum: { approve: 2 } } : { opaque_id: asker.opaqueIds[0] };
    const inquired = await call(
      "POST",
      "/agentlink/inquire",
      { request_id: requestId, action, ...target },
      asker.agentKey,
    );
    const cardId = inquired.body.card_id as string;
    if (quorum) await approve(first, cardId);
    const poll = call("GET", "/agentlink/check-status", { request_id: requestId, wait_seconds: 25 }, asker.agentKey);
    await sleep(20); // held by now: its first read is one short RPC
    const confirmed = performance.now();
    await approve(quorum ? second : first, cardId);
    const answer = await poll;
    if (answer.body.status !== "approved") throw new Error(`long-poll answered ${answer.body.status}`);
    const heard = heardAt.get(requestId);
    if (heard === undefined) throw new Error("the notification was not heard");
    return { resolve: answer.at - heard, fromConfirm: answer.at - confirmed };
  }

  const p99 = (values: number[]) => [...values].sort((a, b) => a - b)[Math.ceil(values.length * 0.99) - 1] as number;
  const single = { resolve: [] as number[], fromConfirm: [] as number[] };
  const quorum = { resolve: [] as number[], fromConfirm: [] as number[] };
  for (let i = 0; i < rounds + warmUp; i++)
    for (const [arm, isQuorum] of [
      [single, false],
      [quorum, true],
    ] as const) {
      const measured = await round(team[i % team.length] as (typeof team)[number], isQuorum);
      if (i < warmUp) continue;
      arm.resolve.push(measured.resolve);
      arm.fromConfirm.push(measured.fromConfirm);
    }
  console.log(
    JSON.stringify({
      name: "agents-quorum-resolution",
      single_resolve_p99_ms: p99(single.resolve),
      quorum_resolve_p99_ms: p99(quorum.resolve),
      ratio: p99(quorum.resolve) / p99(single.resolve),
      single_from_confirm_p99_ms: p99(single.fromConfirm),
      quorum_from_confirm_p99_ms: p99(quorum.fromConfirm),
      rounds,
    }),
  );
} finally {
  await nc.close();
  await mesh.stop();
}
