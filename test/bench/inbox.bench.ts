import { Agent, request } from "node:http";
import { fromBinary } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { consoleTransport } from "@svc/local-mesh/console-client";
import { inboxChangedSubject } from "@svc/platform";
import { Environment } from "@svc/proto/common/v1/caller_pb.js";
import { InboxChangedSchema } from "@svc/proto/common/v1/inbox_watch_pb.js";
import { ConsoleService, KeyType } from "@svc/proto/console/v1/console_pb.js";
import { GateConsoleService, GateType } from "@svc/proto/gate/v1/gate_pb.js";
import { median, startBenchMesh } from "./bench-infrastructure.ts";

/**
 * The person's inbox through the real gateway, gate and NATS. One result line, `inbox-wake`: one person's
 * inbox held open as a long-poll (GET /app/inbox with its cursor) at a time, a gate request then created
 * for that person; `wake_p99_ms` is the 99th percentile from gate's InboxChanged notification (heard by
 * this process as the gateway hears it, right after the commit) to the long-poll's whole answer (the new
 * request, which the notification tells, applied to the inbox the long-poll read when it began), against a bare JetStream publish-and-ack on the same
 * server, seven of them after each round; `ratio` = wake p99 / publish p99 (goal: at most 5). `from_create_p99_ms` also counts
 * create-verification-link itself; `answered_before_heard` counts the wakes that reached this process first.
 * Run: node test/bench/inbox.bench.ts
 */
const rounds = 300;
const warmUp = 20;
/** Publish-and-acks measured after each round: 2,100 in all. */
const acksPerRound = 7;
// Each round reads a person's inbox twice; enough people that none passes the app's 60 requests a minute.
const people = 40;

const mesh = await startBenchMesh(["signing", "account", "agentlink", "gate"]);
const nc = await connect({ servers: mesh.natsUrl });
try {
  const transport = consoleTransport(mesh.consoleUrl, mesh.consoleToken);
  const operators = createClient(ConsoleService, transport);
  const { organizationId } = await operators.createOrganization({ name: "Bench Shop" });
  const { key: secret, keyId } = await operators.createKey({
    organizationId,
    environment: Environment.DEVELOPMENT,
    type: KeyType.SECRET,
    allowedOrigins: [],
    allowedGates: [],
  });
  for (const bucket of ["per_minute", "hourly", "daily", "per_ip"])
    await operators.setKeyLimits({ keyId, bucket, limit: 1_000_000 }).catch(() => undefined);
  await createClient(GateConsoleService, transport).createGate({
    organizationId,
    environment: Environment.DEVELOPMENT,
    key: "plain",
    type: GateType.HUMAN,
    status: "active",
  });

  const keepAlive = new Agent({ keepAlive: true });
  const call = (method: "GET" | "POST", path: string, input: Record<string, unknown>, key: string) =>
    new Promise<{ body: Record<string, unknown>; at: number }>((resolve, reject) => {
      const url = new URL(`/v1${path}`, mesh.gatewayUrl);
      if (method === "GET") for (const [k, v] of Object.entries(input)) url.searchParams.set(k, String(v));
      const body = method === "POST" ? JSON.stringify(input) : undefined;
      const headers: Record<string, string | number> = { authorization: `Bearer ${key}` };
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
  const p99 = (values: number[]) => [...values].sort((a, b) => a - b)[Math.ceil(values.length * 0.99) - 1]!;
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

  const jsm = await jetstreamManager(nc);
  await jsm.streams.add({ name: "BENCH_ACK", subjects: ["bench_ack.>"] });
  const js = jetstream(nc);
  const payload = new Uint8Array(64);
  const acks: number[] = [];
  const publishAndAck = async (times: number, kept: boolean) => {
    for (let i = 0; i < times; i++) {
      const started = performance.now();
      await js.publish("bench_ack.one", payload);
      if (kept) acks.push(performance.now() - started);
    }
  };
  await publishAndAck(200, false);

  const heardAt = new Map<string, number>();
  nc.subscribe(inboxChangedSubject("events"), {
    callback: (_error, message) => {
      heardAt.set(fromBinary(InboxChangedSchema, message.data).svcUserId, performance.now());
    },
  });
  const wakes: number[] = [];
  const fromCreate: number[] = [];
  let answeredBeforeHeard = 0;
  for (let round = 0; round < rounds + warmUp; round++) {
    const person = persons[round % persons.length]!;
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
    const answeredFirst = !heardAt.has(person.svcUserId);
    if (answeredFirst) await nc.flush();
    const heard = heardAt.get(person.svcUserId);
    if (heard === undefined) throw new Error("the notification was not heard");
    // Between the rounds, so that both figures see the same machine: other work on it moves them alike.
    await publishAndAck(acksPerRound, round >= warmUp);
    if (round >= warmUp) {
      wakes.push(Math.max(0, answer.at - heard));
      if (answeredFirst) answeredBeforeHeard++;
      fromCreate.push(answer.at - created);
    }
  }
  console.log(
    JSON.stringify({
      name: "inbox-wake",
      wake_p99_ms: p99(wakes),
      wake_median_ms: median(wakes),
      jetstream_ack_p99_ms: p99(acks),
      ratio: p99(wakes) / p99(acks),
      from_create_p99_ms: p99(fromCreate),
      rounds: wakes.length,
      answered_before_heard: answeredBeforeHeard,
    }),
  );
  keepAlive.destroy();
} finally {
  await nc.close();
  await mesh.stop();
}
