import { randomBytes, randomUUID } from "node:crypto";
import { availableParallelism } from "node:os";
import { Worker } from "node:worker_threads";
import { httpsPushPath } from "../harness/https-push-path.ts";
import { type ArrivedPush, startPushService } from "../harness/push-service.ts";
import { median, startBenchMesh } from "./bench-infrastructure.ts";
import { benchPartner } from "./bench-partner.ts";
import { cpuMicrosSince, cpuReading, machineCpuMicros, postgresProcesses } from "./process-cpu.ts";

/**
 * One burst of agent cards to people holding 1,000 Web Push subscriptions, through the real gateway,
 * agentlink, account and NATS, to the harness push service on production's path (https, HTTP/2:
 * `httpsPushPath`): 10 agents each ask one quorum card of their 10 people at once, and each person has 10
 * subscriptions (the most a person keeps). The push service answers every request 201 as it arrives and
 * checks every push afterwards (VAPID JWT, decryption, payload), so a round fails unless all 1,000 arrived
 * correct over HTTP/2. A push round's rate is 1,000 over the time from the first inquire's start to the last
 * push's arrival; a bare round's is 1,000 POSTs of bodies of the pushes' size to the same service, from a
 * worker thread (a client apart from the service, as account is) with the sender's batch of 50 in flight as
 * streams of one HTTP/2 connection, as account sends them, over the time from its start to the last arrival.
 * Rounds alternate; `ratio` is the median of the rounds' push rate over bare rate (goal: at least 0.5).
 * `account_cpu_us` and `postgres_cpu_us` are their CPU per push (a push round's, from /proc);
 * `machine_cpu_us_per_push` and `machine_cpu_us_per_post` the whole machine's per push and per bare POST
 * (every process, this one's push service and load included), and `ratio_at_full_cores` the ratio a push round
 * would reach if it kept every core busy at that cost: where it is under the goal, no scheduling meets the goal
 * on this machine, only less CPU a push.
 * Run: node test/bench/push-burst.bench.ts [rounds, default 7]
 */
const rounds = Number(process.argv[2] ?? 7);
const agentCount = 10;
const peoplePerAgent = 10;
const subscriptionsPerPerson = 10;
const burst = agentCount * peoplePerAgent * subscriptionsPerPerson;
const inFlight = 50;
const cores = availableParallelism();

/**
 * The bare client: POSTs `count` bodies to the endpoints' `paths` in turn, `inFlight` streams at a time on one
 * HTTP/2 connection, when told to.
 */
const bareClient = `
const { parentPort, workerData } = require("node:worker_threads");
const { connect } = require("node:http2");
const { origin, paths, body, count, inFlight, ca } = workerData;
const session = connect(origin, { ca });
const post = (path) => new Promise((resolve, reject) => {
  const sent = session.request({ ":method": "POST", ":path": path, "content-type": "application/octet-stream", "content-length": body.length });
  sent.resume();
  sent.on("end", resolve);
  sent.on("error", reject);
  sent.end(body);
});
parentPort.on("message", async () => {
  let next = 0;
  await Promise.all(Array.from({ length: inFlight }, async () => {
    while (next < count) await post(paths[next++ % paths.length]);
  }));
  parentPort.postMessage("done");
});
`;

const pushPath = await httpsPushPath();
const mesh = await startBenchMesh(["signing", "account", "agentlink"], { env: pushPath.env });
try {
  const partner = await benchPartner(mesh, "Bench Push Burst");
  const { operators } = partner;
  const call = async (method: "GET" | "POST", path: string, input: Record<string, unknown>, key: string) =>
    (await partner.call(method, path, input, key)).body;

  const first = await operators.mintDevSession({ issuer: mesh.devIdpIssuer, subject: "bench-burst-key" });
  const vapidKey = (await call("GET", "/app/push-key", {}, first.sessionToken)).public_key as string;
  const pushService = await startPushService({
    vapidPublicKey: async () => vapidKey,
    checkLater: true,
    tls: { certificate: pushPath.certificate, http2: true },
  });

  /** Each agent with its people's opaque ids; every person with their subscriptions at the push service. */
  const agentKeys = await partner.registerAgents(agentCount, "Burst", ["deploys"]);
  const team = await Promise.all(
    agentKeys.map(async (agentKey, a) => {
      const opaqueIds: string[] = [];
      for (let p = 0; p < peoplePerAgent; p++) {
        const { sessionToken } = await operators.mintDevSession({
          issuer: mesh.devIdpIssuer,
          subject: `bench-burst-${a}-${p}`,
        });
        await call("GET", "/app/me", {}, sessionToken);
        for (let s = 0; s < subscriptionsPerPerson; s++)
          await call("POST", "/app/push-subscriptions", { ...pushService.subscribe() }, sessionToken);
        const { link_code: linkCode } = await call("POST", "/agent/bind-session", {}, agentKey);
        await call("POST", "/app/agent-bindings/claim", { link_code: linkCode }, sessionToken);
        opaqueIds.push(
          (await call("GET", "/agent/check-binding", { link_code: linkCode }, agentKey)).opaque_id as string,
        );
      }
      return { agentKey, opaqueIds };
    }),
  );
  const accountPid = String(mesh.pid("account"));
  const postgres = () => postgresProcesses(mesh.databaseUrl);
  const arrivedAll = async (count: number) => {
    const arrived: ArrivedPush[] = [];
    const deadline = performance.now() + 60_000;
    while (arrived.length < count) {
      if (performance.now() > deadline) throw new Error(`only ${arrived.length} of ${count} requests arrived in 60 s`);
      await new Promise((resolve) => setTimeout(resolve, 5));
      arrived.push(...pushService.takeArrived());
    }
    if (arrived.length > count) throw new Error(`${arrived.length} requests arrived, not ${count}`);
    return arrived;
  };

  /** One burst of cards: the rate of its pushes, what arrived (for the bare round's bodies) and the CPU. */
  const pushRound = async () => {
    const received = pushService.received.length;
    const account = cpuReading([accountPid]);
    const database = cpuReading(postgres());
    const machine = machineCpuMicros();
    const started = performance.now();
    await Promise.all(
      team.map(({ agentKey, opaqueIds }) =>
        call(
          "POST",
          "/agentlink/inquire",
          {
            request_id: randomUUID(),
            action: { summary_title: "Deploy release 4.2 to production", category: "deploys" },
            approvers: opaqueIds,
            quorum: { approve: 1 },
          },
          agentKey,
        ),
      ),
    );
    const arrived = await arrivedAll(burst);
    const last = Math.max(...arrived.map((push) => push.arrivedAt));
    const cpu = {
      account: cpuMicrosSince(account, [accountPid]) / burst,
      postgres: cpuMicrosSince(database, postgres()) / burst,
      machine: (machineCpuMicros() - machine) / burst,
    };
    await pushService.check(arrived);
    if (pushService.problems.length > 0) throw new Error(`the push service refused: ${pushService.problems[0]}`);
    const pushed = pushService.received.slice(received);
    if (new Set(pushed.map((push) => push.endpoint)).size !== burst)
      throw new Error("the burst did not reach every subscription once");
    if (pushed.some((push) => push.httpVersion !== "2.0")) throw new Error("a push did not come over HTTP/2");
    return { rate: burst / ((last - started) / 1000), arrived, cpu };
  };

  const sample = await pushRound();
  const size = Math.round(median(sample.arrived.map((push) => push.body.length)));
  const urls = [...new Set(sample.arrived.map((push) => push.endpoint))].map((endpoint) => new URL(endpoint));
  const worker = new Worker(bareClient, {
    eval: true,
    workerData: {
      origin: urls[0]?.origin,
      paths: urls.map((url) => url.pathname),
      body: randomBytes(size),
      count: burst,
      inFlight,
      ca: pushPath.certificate.cert,
    },
  });
  const bareRound = async () => {
    const done = new Promise((resolve) => worker.once("message", resolve));
    const machine = machineCpuMicros();
    const started = performance.now();
    worker.postMessage("go");
    await done;
    const arrived = await arrivedAll(burst);
    return {
      rate: burst / ((Math.max(...arrived.map((push) => push.arrivedAt)) - started) / 1000),
      machineCpu: (machineCpuMicros() - machine) / burst,
    };
  };
  await bareRound();

  const push: number[] = [];
  const bare: number[] = [];
  const ratios: number[] = [];
  const accountCpu: number[] = [];
  const postgresCpu: number[] = [];
  const machinePushCpu: number[] = [];
  const machinePostCpu: number[] = [];
  const ceilings: number[] = [];
  for (let round = 0; round < rounds; round++) {
    const pushed = await pushRound();
    const posted = await bareRound();
    push.push(pushed.rate);
    bare.push(posted.rate);
    ratios.push(pushed.rate / posted.rate);
    accountCpu.push(pushed.cpu.account);
    postgresCpu.push(pushed.cpu.postgres);
    machinePushCpu.push(pushed.cpu.machine);
    machinePostCpu.push(posted.machineCpu);
    ceilings.push((cores * 1_000_000) / pushed.cpu.machine / posted.rate);
  }
  console.log(
    JSON.stringify({
      name: "push-burst",
      push_per_s: median(push),
      bare_post_per_s: median(bare),
      ratio: median(ratios),
      account_cpu_us: median(accountCpu),
      postgres_cpu_us: median(postgresCpu),
      machine_cpu_us_per_push: Math.round(median(machinePushCpu)),
      machine_cpu_us_per_post: Math.round(median(machinePostCpu)),
      ratio_at_full_cores: Number(median(ceilings).toFixed(3)),
      body_bytes: size,
      subscriptions: burst,
      push_service: "https, HTTP/2",
      rounds,
    }),
  );
  await worker.terminate();
  partner.close();
  await pushService.stop();
} finally {
  await mesh.stop();
  pushPath.remove();
}
