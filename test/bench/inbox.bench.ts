import { fromBinary } from "@bufbuild/protobuf";
import { connect } from "@nats-io/transport-node";
import { inboxChangedSubject } from "@svc/platform";
import { InboxChangedSchema } from "@svc/proto/common/v1/inbox_watch_pb.js";
import { KeyType } from "@svc/proto/console/v1/console_pb.js";
import {
  interleavedRounds,
  jetStreamPublishAndAck,
  p99,
  sleep,
  startBenchMesh,
  wakeAgainstPublish,
} from "./bench-infrastructure.ts";
import { benchPartner } from "./bench-partner.ts";
import { cpuSince, threadCpu } from "./mesh-arms.ts";

/**
 * The person's inbox through the real gateway, gate and NATS. One result line, `inbox-wake`: one person's
 * inbox held open as a long-poll (GET /app/inbox with its cursor) at a time, a gate request then created
 * for that person. A wake is from gate's InboxChanged notification (heard by this process as the gateway
 * hears it, right after the commit) to the long-poll's whole answer (the new request, which the
 * notification tells, applied to the inbox the long-poll read when it began); the baseline is a bare
 * JetStream publish-and-ack on the same server. The two take turns in rounds ({@link interleavedRounds});
 * `ratio` = the median of the rounds' wake median over publish median (goal: at most 5), `p99_ratio` =
 * wake p99 over publish p99 over all kept samples (bounded at 10). `wake_cpu_us`: the server processes'
 * CPU (the mesh, PostgreSQL, NATS) per round trip of a wake (the inbox read, its long-poll, create-session,
 * create-verification-link); `publish_cpu_us`: nats-server's per publish. `from_create_p99_ms` also counts
 * create-verification-link; `answered_before_heard` counts the wakes that reached this process first.
 * `read_cpu_us`: the server processes' CPU per plain GET /app/inbox, one at a time after the rounds (what the app
 * pays at every open; each inbox then holds the 7 or 8 requests of its person's wakes).
 * Run: node test/bench/inbox.bench.ts
 */
const rounds = 30;
const wakesPerRound = 10;
const publishesPerRound = 20;
// Each wake reads a person's inbox twice; enough people that none passes the app's 60 requests a minute.
const people = 40;
const readsPerPerson = 5;

const mesh = await startBenchMesh(["signing", "account", "agentlink", "gate"]);
const nc = await connect({ servers: mesh.natsUrl });
const partner = await benchPartner(mesh, "Bench Shop");
try {
  const { call, operators } = partner;
  const { key: secret } = await partner.key(KeyType.SECRET);
  await partner.plainGate();
  const persons = await Promise.all(
    Array.from({ length: people }, async (_, i) => {
      const { sessionToken } = await operators.mintDevSession({
        issuer: mesh.devIdpIssuer,
        subject: `bench-inbox-${i}`,
      });
      const me = await call("GET", "/app/me", {}, sessionToken);
      return { sessionToken, svcUserId: me.body.svc_user_id as string };
    }),
  );

  const publishAndAck = await jetStreamPublishAndAck(nc, "BENCH_ACK");
  const heardAt = new Map<string, number>();
  nc.subscribe(inboxChangedSubject("events"), {
    callback: (_error, message) => {
      heardAt.set(fromBinary(InboxChangedSchema, message.data).svcUserId, performance.now());
    },
  });
  const fromCreate: number[] = [];
  const answeredFirst: boolean[] = [];
  let wakeCount = 0;
  const wake = async () => {
    const person = persons[wakeCount++ % persons.length]!;
    const now = await call("GET", "/app/inbox", {}, person.sessionToken);
    const poll = call("GET", "/app/inbox", { wait_seconds: 25, cursor: now.body.cursor }, person.sessionToken);
    await sleep(20); // held by now: its first read is three short RPCs
    heardAt.delete(person.svcUserId);
    const grant = (await call("POST", "/sdk/create-session", {}, secret)).body.anchor_grant_token as string;
    const created = performance.now();
    const link = await call(
      "POST",
      "/sdk/create-verification-link",
      { gate: "plain", svc_user_id: person.svcUserId },
      grant,
    );
    const answer = await poll;
    const requests = answer.body.requests as { request_id: string }[];
    if (!requests.some((r) => r.request_id === link.body.request_id)) throw new Error("the inbox missed the request");
    // The gateway answers within a millisecond of hearing a told change, so this process may read the
    // answer before its own copy of the notification: a round trip to the server delivers that copy, and
    // such a wake counts 0 (it took less than the two deliveries' difference in this process).
    const first = !heardAt.has(person.svcUserId);
    if (first) await nc.flush();
    const heard = heardAt.get(person.svcUserId);
    if (heard === undefined) throw new Error("the notification was not heard");
    answeredFirst.push(first);
    fromCreate.push(answer.at - created);
    return Math.max(0, answer.at - heard);
  };
  const wakes = await interleavedRounds(
    rounds,
    2,
    { sample: wake, perRound: wakesPerRound, processes: mesh.serverProcesses },
    { sample: publishAndAck, perRound: publishesPerRound, processes: mesh.natsProcesses },
  );
  const kept = wakes.arm.samples.length;

  // One plain read of an inbox at a time, each person's now holding the requests of their wakes.
  const reads = people * readsPerPerson;
  const cpuBefore = threadCpu(mesh.serverProcesses());
  for (let i = 0; i < reads; i++) await call("GET", "/app/inbox", {}, persons[i % people]!.sessionToken);
  const readCpuUs = cpuSince(cpuBefore, mesh.serverProcesses()) / reads;
  console.log(
    JSON.stringify({
      name: "inbox-wake",
      ...wakeAgainstPublish(wakes),
      from_create_p99_ms: p99(fromCreate.slice(-kept)),
      answered_before_heard: answeredFirst.slice(-kept).filter(Boolean).length,
      read_cpu_us: Math.round(readCpuUs),
    }),
  );
} finally {
  partner.close();
  await nc.close();
  await mesh.stop();
}
