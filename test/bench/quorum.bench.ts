import { fromBinary } from "@bufbuild/protobuf";
import { connect } from "@nats-io/transport-node";
import { createInternalClient, notificationSubject } from "@svc/platform";
import { AgentService } from "@svc/proto/agentlink/v1/agentlink_pb.js";
import { CardLeftQueueSchema } from "@svc/proto/agentlink/v1/card_watch_pb.js";
import { interleavedRounds, p99, sleep, startBenchMesh } from "./bench-infrastructure.ts";
import { benchPartner } from "./bench-partner.ts";

/**
 * A quorum card's resolution against a card to one person, through the real gateway, agentlink,
 * signing and NATS, taking turns in rounds of the same run ({@link interleavedRounds}). Each sample holds the
 * agent's check-status long-poll, then the deciding confirm (a silent sandbox human's, through agentlink's
 * Confirm as the app's confirm calls it; a 3-approver card, quorum 2, gets its first approval beforehand).
 * A resolution is from the deciding commit (agentlink's notification, heard by this process as the
 * gateway hears it) to the long-poll's answer; `ratio` = the median of the rounds' quorum median over
 * single median (goal: at most 1.5), `p99_ratio` = the quorum card's p99 over the single card's over all
 * kept samples (bounded at 3). `single_cpu_us`, `quorum_cpu_us`: the server processes' CPU (the mesh,
 * PostgreSQL, NATS) per card, from inquire to answer. `from_confirm_p99_ms` also counts the confirm itself
 * (the quorum card's proof is signed under its row lock). Run: node test/bench/quorum.bench.ts [rounds, default 30]
 */
const rounds = Number(process.argv[2] ?? 30);
const warmUp = 1;
const cardsPerRound = 10;
/** Agents taking turns, each with at most 10 cards, so that no agent key meets its per-minute limit. */
const agentCount = Math.ceil((2 * (rounds + warmUp) * cardsPerRound) / 10);

const mesh = await startBenchMesh(["signing", "account", "agentlink"]);
const nc = await connect({ servers: mesh.natsUrl });
const partner = await benchPartner(mesh, "Bench");
try {
  const { call } = partner;
  const agentlink = createInternalClient(AgentService, mesh.urls.agentlink as string, { timeoutMs: 30_000 });
  /** Silent sandbox humans (nobody answers for them), bound to every agent. */
  const people = await Promise.all(Array.from({ length: 3 }, async () => (await partner.sandboxHuman()).svcUserId));
  const team: { agentKey: string; opaqueIds: string[] }[] = [];
  // Eight agents at a time: all at once, a loaded machine's agentlink missed the gateway's deadline.
  for (let start = 0; start < agentCount; start += 8) {
    const keys = await partner.registerAgents(Math.min(8, agentCount - start), `Quorum${start}`, ["deploys"]);
    const bound = keys.map(async (agentKey) => {
      const opaqueIds: string[] = [];
      for (const svcUserId of people) opaqueIds.push(await partner.bindAgent(agentKey, svcUserId));
      return { agentKey, opaqueIds };
    });
    team.push(...(await Promise.all(bound)));
  }
  const [first, second] = people as [string, string];

  const heardAt = new Map<string, number>();
  nc.subscribe(notificationSubject("events", "agentlink.card_left_queue"), {
    callback: (_error, message) => {
      heardAt.set(fromBinary(CardLeftQueueSchema, message.data).requestId, performance.now());
    },
  });
  const approve = (svcUserId: string, cardId: string) =>
    agentlink.confirm({ svcUserId, decisions: [{ cardId, verdict: "approve" }] });
  const action = { summary_title: "Deploy release 4.2 to production", category: "deploys" };

  let cards = 0;
  /** One card, its held long-poll, the deciding confirm: the resolution's latency (from the commit). */
  const resolution = (quorum: boolean, fromConfirm: number[]) => async () => {
    const asker = team[Math.floor(cards++ / 10)]!;
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
    // The answer may reach this process before its own copy of the notification: a round trip to the
    // server delivers that copy, and such a wake counts 0 (less than the two deliveries' difference here).
    if (!heardAt.has(requestId)) await nc.flush();
    const heard = heardAt.get(requestId);
    if (heard === undefined) throw new Error("the notification was not heard");
    fromConfirm.push(answer.at - confirmed);
    return Math.max(0, answer.at - heard);
  };

  const singleFromConfirm: number[] = [];
  const quorumFromConfirm: number[] = [];
  const measured = await interleavedRounds(
    rounds,
    warmUp,
    { sample: resolution(true, quorumFromConfirm), perRound: cardsPerRound, processes: mesh.serverProcesses },
    { sample: resolution(false, singleFromConfirm), perRound: cardsPerRound, processes: mesh.serverProcesses },
  );
  const kept = measured.arm.samples.length;
  console.log(
    JSON.stringify({
      name: "agents-quorum-resolution",
      ratio: measured.ratio,
      p99_ratio: measured.arm.p99Ms / measured.baseline.p99Ms,
      single_resolve_median_ms: measured.baseline.medianMs,
      quorum_resolve_median_ms: measured.arm.medianMs,
      single_resolve_p99_ms: measured.baseline.p99Ms,
      quorum_resolve_p99_ms: measured.arm.p99Ms,
      single_cpu_us: Math.round(measured.baseline.cpuUsPerSample),
      quorum_cpu_us: Math.round(measured.arm.cpuUsPerSample),
      min_round_ratio: measured.minRoundRatio,
      max_round_ratio: measured.maxRoundRatio,
      single_from_confirm_p99_ms: p99(singleFromConfirm.slice(-kept)),
      quorum_from_confirm_p99_ms: p99(quorumFromConfirm.slice(-kept)),
      cards_per_arm: kept,
    }),
  );
} finally {
  partner.close();
  await nc.close();
  await mesh.stop();
}
