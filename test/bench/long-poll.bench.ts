import { readFileSync } from "node:fs";
import { fromBinary } from "@bufbuild/protobuf";
import { connect } from "@nats-io/transport-node";
import { createInternalClient, notificationSubject } from "@svc/platform";
import { AgentService } from "@svc/proto/agentlink/v1/agentlink_pb.js";
import { CardLeftQueueSchema } from "@svc/proto/agentlink/v1/card_watch_pb.js";
import { SigningService } from "@svc/proto/signing/v1/signing_pb.js";
import {
  interleavedRounds,
  jetStreamPublishAndAck,
  median,
  p99,
  sleep,
  startBenchMesh,
  wakeAgainstPublish,
} from "./bench-infrastructure.ts";
import { benchPartner } from "./bench-partner.ts";
import { cpuSince, threadCpu } from "./mesh-arms.ts";
import { mintAttestations } from "./process-cpu.ts";

/**
 * The check-status long-poll through the real gateway, agentlink and NATS. Two result lines:
 * - `long-poll-wake`: one held long-poll at a time, its card cancelled. A wake is from the state change
 *   (agentlink's notification, heard by this process as the gateway hears it, right after the commit) to
 *   the long-poll's whole answer; the baseline is a bare JetStream publish-and-ack on the same server. The
 *   cancel goes to agentlink's RPC directly, not through the gateway: through it, the gateway answered the
 *   cancel at the very moment it woke the poll, and which of the two it did first decided a wake's time
 *   (a bimodal median; the ratio read 3.6 to 6.3 in three runs of one commit). The two arms take turns in
 *   rounds ({@link interleavedRounds}); `ratio` = the median of the rounds' wake median over publish median
 *   (goal: at most 5), `p99_ratio` = wake p99 over publish p99 over all kept samples (bounded at 10), 2,000
 *   wakes so that one stall cannot decide a p99. `wake_cpu_us`: the server processes' CPU (the mesh,
 *   PostgreSQL, NATS) per round trip of a card (inquire, long-poll, cancel); `publish_cpu_us`: nats-server's
 *   per publish. `from_cancel_p99_ms` also counts the cancel itself (agentlink's transaction).
 * - `long-poll-hold`: one gateway holding `held` long-polls at once (agents' in_flight and per-minute limits
 *   respected); `rss_kib_per_held` = the gateway's RSS growth over its idle RSS, per held poll, in a first
 *   hold before any other (goal: at most 32): a later hold reuses memory an earlier one grew, so a median
 *   moved with the number of holds (6 KiB over five, 14 to 16 over three). Then verify-token runs idle, held,
 *   idle, held, ..., idle, 16 in flight, 3,000 each, once the mesh idles: every held measurement is a round, its ratio the
 *   mean server CPU per verify (gateway, signing, account, agentlink, PostgreSQL, NATS: holding costs them all)
 *   of the idle ones either side over its own, so a drift of the machine's load moves both alike; `ratio` = the median of the rounds' ratios (goal: at least
 *   0.9). Throughput is reported beside it. `failed` counts held long-polls not answered `queued` at their end (or
 *   not at all within a minute); `answered_before_measured`, those answered before their hold's measurement
 *   ended (above 0, the measurement outlasted the hold: a machine too loaded for this benchmark).
 * Run: node test/bench/long-poll.bench.ts [held, default 10000] (10,000 sockets on each side: needs
 * `ulimit -n` above that; Node cannot raise it itself).
 */
const held = Number(process.argv[2] ?? 10_000);

const wakeRounds = 40;
const wakesPerRound = 50;
const publishesPerRound = 50;
/** 2,000 cards of two gateway calls each stay far under 60 agents' 120 calls a minute. */
const wakeAgents = 60;
const holdRounds = 7;
const verifyInFlight = 16;
/**
 * A second of server CPU a measurement: at 1,000 (a third of a second) rounds of one run read 0.71 to 1.34
 * and whole runs of one commit 0.84 to 1.03, the idle mesh's own work (26 ms a second here) and a collection
 * falling in one window or the next deciding a round. The CPU comes from the threads' schedstat (ns): read
 * from /proc/<pid>/stat's 10 ms ticks in six processes, a tick either way in each moved a round's ratio by up
 * to a sixth.
 */
const verifiesPerMeasurement = 3000;
const pollsPerCard = 40;
/** A held long-poll not answered by then (25 s of wait and a loaded machine's slack) counts as failed. */
const heldPollDeadlineMs = 60_000;
/** Up to two holds fall in one minute: an agent's 2 x 40 polls and its inquire stay under its 120 a minute. */
const cardsPerAgent = 1;

const mesh = await startBenchMesh(["signing", "account", "agentlink"]);
const nc = await connect({ servers: mesh.natsUrl });
const partner = await benchPartner(mesh, "Bench");
try {
  const { call } = partner;
  const { svcUserId } = await partner.sandboxHuman();
  const inquire = async (key: string) => {
    const requestId = crypto.randomUUID();
    const action = { summary_title: "Book a table for two", category: "travel" };
    await call("POST", "/agentlink/inquire", { request_id: requestId, svc_user_id: svcUserId, action }, key);
    return requestId;
  };

  // --- wake: a held long-poll woken by a cancel, against a bare JetStream publish-and-ack.
  const publishAndAck = await jetStreamPublishAndAck(nc, "BENCH_ACK");
  const heardAt = new Map<string, number>();
  nc.subscribe(notificationSubject("events", "agentlink.card_left_queue"), {
    callback: (_error, message) => {
      heardAt.set(fromBinary(CardLeftQueueSchema, message.data).requestId, performance.now());
    },
  });
  const agentlink = createInternalClient(AgentService, mesh.urls.agentlink!, { timeoutMs: 30_000 });
  const wakeAgentsAsCalled = await Promise.all(
    (await partner.registerAgents(wakeAgents, "Wake", ["travel"])).map(async (key) => {
      const { caller } = await agentlink.authenticateAgentKey({ agentKey: key });
      if (!caller) throw new Error("agentlink refused a key it just issued");
      return { key, caller };
    }),
  );
  const fromCancel: number[] = [];
  let wakeCount = 0;
  const wake = async () => {
    const { key, caller } = wakeAgentsAsCalled[wakeCount++ % wakeAgentsAsCalled.length]!;
    const requestId = await inquire(key);
    const poll = call("GET", "/agentlink/check-status", { request_id: requestId, wait_seconds: 25 }, key);
    await sleep(20); // held by now: its first read is one short RPC
    const cancelled = performance.now();
    await agentlink.cancel({ caller, requestId });
    const answer = await poll;
    if (answer.body.status !== "cancelled") throw new Error(`long-poll answered ${answer.body.status}`);
    // The answer may reach this process before its own copy of the notification: a round trip to the
    // server delivers that copy, and such a wake counts 0 (less than the two deliveries' difference here).
    if (!heardAt.has(requestId)) await nc.flush();
    const heard = heardAt.get(requestId);
    if (heard === undefined) throw new Error("the notification was not heard");
    fromCancel.push(answer.at - cancelled);
    return Math.max(0, answer.at - heard);
  };
  const wakes = await interleavedRounds(
    wakeRounds,
    2,
    { sample: wake, perRound: wakesPerRound, processes: mesh.serverProcesses },
    { sample: publishAndAck, perRound: publishesPerRound, processes: mesh.natsProcesses },
  );
  console.log(
    JSON.stringify({
      name: "long-poll-wake",
      ...wakeAgainstPublish(wakes),
      from_cancel_p99_ms: p99(fromCancel.slice(-wakes.arm.samples.length)),
    }),
  );

  // --- hold: verify-token's server CPU idle and while `held` long-polls are held, in turns.
  const signing = createInternalClient(SigningService, mesh.urls.signing!, { timeoutMs: 30_000 });
  /** Tokens live 120 s: each measurement gets its own, signed just before (a held one's before the holding starts). */
  const fresh = () => mintAttestations(signing, verifiesPerMeasurement);
  /**
   * Until the server processes idle (under a twentieth of a core over 200 ms, at most 15 s): a verify run measured
   * while the mesh still read the last held polls, or answered 10,000 of them at their end, was charged that
   * work, and rounds read from 0.37 to 1.12 in one run.
   */
  const quiet = async () => {
    for (const deadline = performance.now() + 15_000; performance.now() < deadline; ) {
      const before = threadCpu(mesh.serverProcesses());
      await sleep(200);
      if (cpuSince(before, mesh.serverProcesses()) < 10_000) return;
    }
  };
  const verify = async (tokens: string[]) => {
    await quiet();
    const processes = mesh.serverProcesses();
    const before = threadCpu(processes);
    const started = performance.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: verifyInFlight }, async () => {
        while (next < tokens.length) {
          const { body } = await call("POST", "/sdk/verify-token", { token: tokens[next++] });
          if (body.valid !== true) throw new Error("verify-token refused a fresh token");
        }
      }),
    );
    const seconds = (performance.now() - started) / 1000;
    const cpuUs = cpuSince(before, mesh.serverProcesses());
    return { cpuUsPerVerify: cpuUs / tokens.length, opsPerSecond: tokens.length / seconds };
  };

  const agentCount = Math.ceil(held / (pollsPerCard * cardsPerAgent));
  const holdKeys: string[] = [];
  for (let first = 0; first < agentCount; first += 25)
    holdKeys.push(...(await partner.registerAgents(Math.min(25, agentCount - first), `Hold${first}`, ["travel"])));
  const cards: { key: string; requestId: string }[] = [];
  // A few at a time, as partners' agents would: a burst of 100 inquires overruns agentlink's deadlines here.
  for (let first = 0; first < holdKeys.length; first += 4)
    await Promise.all(
      holdKeys.slice(first, first + 4).map(async (key) => {
        for (let i = 0; i < cardsPerAgent; i++) cards.push({ key, requestId: await inquire(key) });
      }),
    );

  /** What the held long-polls answered, over every hold. */
  const holding = { answered: 0, failed: 0, firstFailure: undefined as string | undefined };
  /**
   * Holds `held` long-polls: once all are sent and read, resolves to the promise of their answers, inside an
   * object (returned bare, it would be awaited with them).
   */
  const hold = async () => {
    const polls: Promise<unknown>[] = [];
    for (let i = 0; i < held; i++) {
      const card = cards[Math.floor(i / pollsPerCard)]!;
      const query = { request_id: card.requestId, wait_seconds: 25 };
      const poll = async () => {
        try {
          const { body } = await call("GET", "/agentlink/check-status", query, card.key, {
            agent: false,
            timeoutMs: heldPollDeadlineMs,
          });
          if (body.status !== "queued") throw new Error(`a held long-poll answered ${body.status}`);
          holding.answered++;
        } catch (error) {
          holding.failed++;
          holding.firstFailure ??= (error as Error).message;
        }
      };
      polls.push(poll());
      // At most about 1,000 a second, which agentlink reads comfortably on two shared cores, in bursts of 50,
      // each after the gateway answered once since the last: faster, a loaded gateway's accept queue
      // overflowed, and the connections it dropped were never answered.
      if (i % 50 === 49) await Promise.all([sleep(50), fetch(`${mesh.gatewayUrl}/healthz`)]);
    }
    await quiet(); // the last first reads
    return { answers: Promise.all(polls) };
  };
  // Memory first, before any verify-token: a verify run's garbage left the gateway's heap room that a hold
  // then filled without growing RSS, and the figure fell from 14–16 KiB a poll to 0.9.
  const gatewayPid = mesh.pid("gateway")!;
  const idleRss = rssKib(gatewayPid);
  const memoryHold = await hold();
  const rssGrowthKib = rssKib(gatewayPid) - idleRss;
  await memoryHold.answers;

  await verify(await fresh()); // warm-up
  const idle = [await verify(await fresh())];
  const heldRuns: Awaited<ReturnType<typeof verify>>[] = [];
  let answeredBeforeMeasured = 0;
  for (let round = 0; round < holdRounds; round++) {
    const heldTokens = await fresh();
    const answeredBefore = holding.answered;
    const { answers } = await hold();
    heldRuns.push(await verify(heldTokens));
    answeredBeforeMeasured += holding.answered - answeredBefore;
    await answers;
    idle.push(await verify(await fresh()));
  }
  const roundRatios = heldRuns.map(
    (run, round) => (idle[round]!.cpuUsPerVerify + idle[round + 1]!.cpuUsPerVerify) / 2 / run.cpuUsPerVerify,
  );
  const meanOf = (values: number[]) => values.reduce((sum, value) => sum + value, 0) / values.length;
  console.log(
    JSON.stringify({
      name: "long-poll-hold",
      held,
      rounds: holdRounds,
      answered_before_measured: answeredBeforeMeasured,
      failed: holding.failed,
      ...(holding.firstFailure && { first_failure: holding.firstFailure }),
      rss_kib_per_held: rssGrowthKib / held,
      ratio: median(roundRatios),
      min_round_ratio: Math.min(...roundRatios),
      max_round_ratio: Math.max(...roundRatios),
      idle_verify_cpu_us: Math.round(meanOf(idle.map((run) => run.cpuUsPerVerify))),
      held_verify_cpu_us: Math.round(meanOf(heldRuns.map((run) => run.cpuUsPerVerify))),
      idle_verify_ops: Math.round(meanOf(idle.map((run) => run.opsPerSecond))),
      held_verify_ops: Math.round(meanOf(heldRuns.map((run) => run.opsPerSecond))),
    }),
  );
} finally {
  partner.close();
  await nc.close();
  await mesh.stop();
}

function rssKib(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, "utf8").match(/^VmRSS:\s+(\d+) kB$/m);
  if (!line) throw new Error(`no VmRSS for ${pid}`);
  return Number(line[1]);
}
