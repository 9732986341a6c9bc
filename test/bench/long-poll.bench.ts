import { fromBinary } from "@bufbuild/protobuf";
import { connect } from "@nats-io/transport-node";
import { createInternalClient, notificationSubject } from "@svc/platform";
import { AgentService } from "@svc/proto/agentlink/v1/agentlink_pb.js";
import { CardLeftQueueSchema } from "@svc/proto/agentlink/v1/card_watch_pb.js";
import {
  interleavedRounds,
  jetStreamPublishAndAck,
  p99,
  sleep,
  startBenchMesh,
  wakeAgainstPublish,
} from "./bench-infrastructure.ts";
import { benchPartner } from "./bench-partner.ts";

/**
 * `long-poll-wake`: the check-status long-poll through the real gateway, agentlink and NATS, one held at a time,
 * its card cancelled. A wake is from the state change (agentlink's notification, heard by this process as the
 * gateway hears it, right after the commit) to the long-poll's whole answer; the baseline is a bare JetStream
 * publish-and-ack on the same server. The cancel goes to agentlink's RPC directly, not through the gateway:
 * through it, the gateway answered the cancel at the very moment it woke the poll, and which of the two it did
 * first decided a wake's time (a bimodal median; the ratio read 3.6 to 6.3 in three runs of one commit). The two
 * arms take turns in rounds ({@link interleavedRounds}); `ratio` = the median of the rounds' wake median over
 * publish median (goal: at most 5), `p99_ratio` = wake p99 over publish p99 over all kept samples (bounded at
 * 10), 2,000 wakes so that one stall cannot decide a p99. `wake_cpu_us`: the server processes' CPU (the mesh,
 * PostgreSQL, NATS) per round trip of a card (inquire, long-poll, cancel); `publish_cpu_us`: nats-server's per
 * publish. `from_cancel_p99_ms` also counts the cancel itself (agentlink's transaction).
 * What holding 10,000 of them costs is `long-poll-hold.bench.ts`.
 * Run: node test/bench/long-poll.bench.ts
 */
const wakeRounds = 40;
const wakesPerRound = 50;
const publishesPerRound = 50;
/** 2,000 cards of two gateway calls each stay far under 60 agents' 120 calls a minute. */
const wakeAgents = 60;

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
} finally {
  partner.close();
  await nc.close();
  await mesh.stop();
}
