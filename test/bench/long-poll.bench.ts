import { readdirSync, readFileSync } from "node:fs";
import { Agent, request } from "node:http";
import { fromBinary } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { createClient } from "@connectrpc/connect";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { consoleTransport } from "@svc/local-mesh/console-client";
import { createInternalClient, notificationSubject } from "@svc/platform";
import { AccountConsoleService, SandboxBehavior } from "@svc/proto/account/v1/account_pb.js";
import { AgentConsoleService } from "@svc/proto/agentlink/v1/agentlink_pb.js";
import { CardLeftQueueSchema } from "@svc/proto/agentlink/v1/card_watch_pb.js";
import { Environment } from "@svc/proto/common/v1/caller_pb.js";
import { ConsoleService } from "@svc/proto/console/v1/console_pb.js";
import { SigningService } from "@svc/proto/signing/v1/signing_pb.js";
import { measureThroughput, startBenchMesh } from "./bench-infrastructure.ts";

/**
 * The check-status long-poll through the real gateway, agentlink and NATS. Two result lines:
 * - `long-poll-wake`: one held long-poll at a time, its card cancelled; `wake_p99_ms` is the 99th
 *   percentile from the state change (agentlink's notification, heard by this process as the gateway
 *   hears it, right after the commit) to the long-poll's whole answer, against a bare JetStream
 *   publish-and-ack on the same server; `ratio` = wake p99 / publish p99 (goal: at most 5).
 *   `from_cancel_p99_ms` also counts the cancel request itself (gateway, agentlink's transaction).
 * - `long-poll-hold`: one gateway holding `held` long-polls at once (100 agents, their in_flight and
 *   per-minute limits respected); `rss_kib_per_held` = the gateway's RSS growth over its idle RSS, per
 *   held poll (goal: at most 32), and `ratio` = verify-token throughput while they are held over the idle
 *   figure (the mean of before holding and after every wait answered), 16 in flight (goal: at least 0.9).
 * Run: node test/bench/long-poll.bench.ts [held, default 10000] (10,000 sockets on each side: needs
 * `ulimit -n` above that; Node cannot raise it itself).
 */
const held = Number(process.argv[2] ?? 10_000);

const wakeRounds = 300;
const verifyInFlight = 16;
const verifyMs = 4000;
const tokensPerMeasurement = 20_000;
const pollsPerCard = 10;
const cardsPerAgent = 10;

const mesh = await startBenchMesh(["signing", "account", "agentlink"]);
const nc = await connect({ servers: mesh.natsUrl });
try {
  const transport = consoleTransport(mesh.consoleUrl, mesh.consoleToken);
  const { organizationId } = await createClient(ConsoleService, transport).createOrganization({ name: "Bench" });
  const { svcUserId } = await createClient(AccountConsoleService, transport).createSandboxHuman({
    environment: Environment.DEVELOPMENT,
    behavior: SandboxBehavior.SILENT,
  });
  const agents = createClient(AgentConsoleService, transport);
  const newAgents = (count: number, prefix: string) =>
    Promise.all(
      Array.from({ length: count }, async (_, i) => {
        const registered = await agents.registerAgent({
          organizationId,
          environment: Environment.DEVELOPMENT,
          name: `${prefix}_${i}`,
          categories: ["travel"],
        });
        return registered.agentKey;
      }),
    );

  const keepAlive = new Agent({ keepAlive: true });
  const call = (
    method: "GET" | "POST",
    path: string,
    input: Record<string, unknown>,
    key?: string,
    agent: Agent | false = keepAlive,
  ) =>
    new Promise<{ body: Record<string, unknown>; at: number }>((resolve, reject) => {
      const url = new URL(`/v1${path}`, mesh.gatewayUrl);
      if (method === "GET") for (const [k, v] of Object.entries(input)) url.searchParams.set(k, String(v));
      const body = method === "POST" ? JSON.stringify(input) : undefined;
      const headers: Record<string, string | number> = key ? { authorization: `Bearer ${key}` } : {};
      if (body !== undefined)
        Object.assign(headers, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
      const sent = request(url, { method, agent, headers }, (response) => {
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
  const inquire = async (key: string) => {
    const requestId = crypto.randomUUID();
    const action = { summary_title: "Book a table for two", category: "travel" };
    await call("POST", "/agentlink/inquire", { request_id: requestId, svc_user_id: svcUserId, action }, key);
    return requestId;
  };
  const p99 = (values: number[]) => [...values].sort((a, b) => a - b)[Math.ceil(values.length * 0.99) - 1]!;
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

  // --- wake: a bare JetStream publish-and-ack, then a held long-poll woken by a cancel.
  const jsm = await jetstreamManager(nc);
  await jsm.streams.add({ name: "BENCH_ACK", subjects: ["bench_ack.>"] });
  const js = jetstream(nc);
  const payload = new Uint8Array(64);
  const acks: number[] = [];
  for (let i = 0; i < 2200; i++) {
    const started = performance.now();
    await js.publish("bench_ack.one", payload);
    if (i >= 200) acks.push(performance.now() - started);
  }

  const heardAt = new Map<string, number>();
  nc.subscribe(notificationSubject("events", "agentlink.card_left_queue"), {
    callback: (_error, message) => {
      heardAt.set(fromBinary(CardLeftQueueSchema, message.data).requestId, performance.now());
    },
  });
  const wakeKeys = await newAgents(10, "Wake");
  const wakes: number[] = [];
  const fromCancel: number[] = [];
  for (let round = 0; round < wakeRounds; round++) {
    const key = wakeKeys[round % wakeKeys.length]!;
    const requestId = await inquire(key);
    const poll = call("GET", "/agentlink/check-status", { request_id: requestId, wait_seconds: 25 }, key);
    await sleep(20); // held by now: its first read is one short RPC
    const cancelled = performance.now();
    await call("POST", "/agentlink/cancel", { request_id: requestId }, key);
    const answer = await poll;
    if (answer.body.status !== "cancelled") throw new Error(`long-poll answered ${answer.body.status}`);
    const heard = heardAt.get(requestId);
    if (heard === undefined) throw new Error("the notification was not heard");
    if (round >= 20) {
      wakes.push(answer.at - heard);
      fromCancel.push(answer.at - cancelled);
    }
  }
  console.log(
    JSON.stringify({
      name: "long-poll-wake",
      wake_p99_ms: p99(wakes),
      jetstream_ack_p99_ms: p99(acks),
      ratio: p99(wakes) / p99(acks),
      from_cancel_p99_ms: p99(fromCancel),
      rounds: wakes.length,
    }),
  );

  // --- hold: verify-token idle, then with `held` long-polls held.
  const signing = createInternalClient(SigningService, mesh.urls.signing!, { timeoutMs: 30_000 });
  let signed = 0;
  /** Tokens live 120 s: each measurement gets its own, signed just before. */
  const freshTokens = async () => {
    const tokens: string[] = [];
    while (tokens.length < tokensPerMeasurement) {
      const batch = await Promise.all(
        Array.from({ length: 200 }, () =>
          signing.signAttestation({
            requestId: `req_${(signed++).toString(16).padStart(32, "0")}`,
            verified: true,
            organizationId: "bench-org",
            verifiedAt: timestampFromDate(new Date()),
          }),
        ),
      );
      tokens.push(...batch.map((r) => r.token));
    }
    return tokens;
  };
  const verify = (tokens: string[]) =>
    measureThroughput(verifyInFlight, verifyMs, async (i) => {
      const token = tokens[i];
      if (!token) throw new Error("ran out of fresh tokens: raise tokensPerMeasurement");
      const { body } = await call("POST", "/sdk/verify-token", { token });
      if (body.valid !== true) throw new Error("verify-token refused a fresh token");
    });

  const agentCount = Math.ceil(held / (pollsPerCard * cardsPerAgent));
  const holdKeys = await newAgents(agentCount, "Hold");
  const cards: { key: string; requestId: string }[] = [];
  // A few at a time, as partners' agents would: a burst of 100 inquires overruns agentlink's deadlines here.
  for (let first = 0; first < holdKeys.length; first += 4)
    await Promise.all(
      holdKeys.slice(first, first + 4).map(async (key) => {
        for (let i = 0; i < cardsPerAgent; i++) cards.push({ key, requestId: await inquire(key) });
      }),
    );

  await verify(await freshTokens()); // warm-up
  const gatewayPid = childPid("gateway/src/server.ts");
  const idleOps = await verify(await freshTokens());
  const idleRss = rssKib(gatewayPid);
  const heldTokens = await freshTokens();

  let answered = 0;
  const failures: string[] = [];
  const polls: Promise<unknown>[] = [];
  for (let i = 0; i < held; i++) {
    const card = cards[Math.floor(i / pollsPerCard)]!;
    const query = { request_id: card.requestId, wait_seconds: 25 };
    const poll = call("GET", "/agentlink/check-status", query, card.key, false);
    polls.push(
      poll.then(
        () => answered++,
        (error: Error) => failures.push(error.message),
      ),
    );
    // About 1,000 a second, which agentlink reads comfortably on two shared cores.
    if (i % 250 === 249) await sleep(250);
  }
  await sleep(2000); // the last first reads
  const heldRss = rssKib(gatewayPid);
  const heldOps = await verify(heldTokens);
  const answeredEarly = answered;
  await Promise.all(polls);
  // Idle again once every wait has answered: the machine's other load moves both idle figures alike.
  const idleAfterOps = await verify(await freshTokens());
  const idleMean = (idleOps + idleAfterOps) / 2;
  console.log(
    JSON.stringify({
      name: "long-poll-hold",
      held,
      answered_before_measured: answeredEarly,
      failed: failures.length,
      ...(failures.length > 0 && { first_failure: failures[0] }),
      idle_rss_mib: Math.round(idleRss / 1024),
      held_rss_mib: Math.round(heldRss / 1024),
      rss_kib_per_held: (heldRss - idleRss) / held,
      idle_verify_ops: Math.round(idleOps),
      held_verify_ops: Math.round(heldOps),
      idle_after_verify_ops: Math.round(idleAfterOps),
      ratio: heldOps / idleMean,
    }),
  );
  keepAlive.destroy();
} finally {
  await nc.close();
  await mesh.stop();
}

/** The pid of this process's child running `entry`. */
function childPid(entry: string): number {
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      const parent = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (parent === process.pid && readFileSync(`/proc/${name}/cmdline`, "utf8").includes(entry)) return Number(name);
    } catch {
      // the process ended meanwhile
    }
  }
  throw new Error(`no child process runs ${entry}`);
}

function rssKib(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, "utf8").match(/^VmRSS:\s+(\d+) kB$/m);
  if (!line) throw new Error(`no VmRSS for ${pid}`);
  return Number(line[1]);
}
