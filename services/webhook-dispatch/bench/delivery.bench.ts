/**
 * Deliveries per second of a burst of events to one local receiver that answers 204, against a
 * baseline measured on the same machine in alternating rounds (which goes first swaps each round;
 * the median of the rounds' ratios counts): the lower of what a bare node:http server answers and how
 * many single-row UPDATEs the same PostgreSQL commits, both at the dispatcher's per-endpoint
 * concurrency. The ratio says how much of those primitives the dispatcher turns into signed, recorded
 * deliveries. Beside it, CPU per operation from /proc: the dispatcher's and PostgreSQL's per delivery,
 * the receiver's per bare request, PostgreSQL's per UPDATE (this process, the load, is not counted).
 *
 * The UPDATEs once ran one after another: a rate set by how fast the machine wakes a process (two
 * wake-ups a statement), not by work, against a dispatcher that keeps many statements in flight. It
 * decided the baseline, so the ratio read 0.50 on one machine and 0.25 on another, and 0.33 to 0.80
 * between rounds of one run under load.
 *
 * Starts its own PostgreSQL and nats-server in a temporary directory, runs webhook-dispatch as its
 * own process with its defaults, stops by itself, and prints one JSON line on stdout (progress, and
 * the output of the processes it starts, go to stderr).
 *
 *   node services/webhook-dispatch/bench/delivery.bench.ts
 */
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { chmod, mkdtemp, rm } from "node:fs/promises";
import { Agent, request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { connectEventBus } from "@svc/platform";
import { WebhookConsoleService } from "@svc/proto/webhook/v1/webhook_pb.js";
import pg from "pg";
import { startInfrastructure } from "../../../deploy/local/src/infrastructure.ts";
import { freePort } from "../../../deploy/local/src/process-tools.ts";
import { median, stopOnTerminate } from "../../../test/bench/bench-infrastructure.ts";
import { cpuMicrosSince, cpuReading, postgresProcesses } from "../../../test/bench/process-cpu.ts";
import { gateEvent, publish } from "../test/support/events.ts";

const events = 2000;
const warmUpEvents = 1000;
/** Bursts measured, each beside its own baseline, so that the machine's drift hits both alike. */
const rounds = 7;
const baselineRequests = 5000;
const baselineUpdates = 5000;
/** The dispatcher's default per-endpoint concurrency; both baselines get the same. */
const concurrency = 4;
const log = (line: string) => process.stderr.write(`${line}\n`);

/** A bare node:http server answering 204 in its own process; it reports its port, then its count on request. */
const receiverScript = `
  let count = 0;
  const server = require("node:http").createServer((req, res) => {
    req.resume();
    req.on("end", () => { count += 1; res.writeHead(204).end(); });
  });
  server.listen(0, "127.0.0.1", () => process.send({ port: server.address().port }));
  process.on("message", () => process.send({ count }));
  process.on("disconnect", () => process.exit(0));
`;

interface Receiver {
  child: ChildProcess;
  pid: string;
  url: string;
  count(): Promise<number>;
}

async function startReceiverProcess(): Promise<Receiver> {
  const child = spawn(process.execPath, ["-e", receiverScript], { stdio: ["ignore", 2, 2, "ipc"] });
  const [{ port }] = (await once(child, "message")) as [{ port: number }];
  return {
    child,
    pid: String(child.pid),
    url: `http://127.0.0.1:${port}/webhooks`,
    async count() {
      child.send("count");
      const [{ count }] = (await once(child, "message")) as [{ count: number }];
      return count;
    },
  };
}

/** The service as it runs in production: its own process, with its defaults. */
async function startDispatcherProcess(env: Record<string, string>) {
  const child = spawn(process.execPath, [fileURLToPath(new URL("../src/server.ts", import.meta.url))], {
    env: { ...process.env, ...env },
    stdio: ["ignore", 2, 2],
  });
  const exited = once(child, "exit");
  const baseUrl = `http://127.0.0.1:${env.WEBHOOK_DISPATCH_PORT}`;
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill("SIGCONT");
    child.kill("SIGTERM");
    const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
    await exited;
    clearTimeout(timer);
  };
  for (let tries = 0; (await fetch(`${baseUrl}/readyz`).catch(() => undefined))?.status !== 200; tries += 1) {
    if (tries > 200) {
      await stop();
      throw new Error("webhook-dispatch did not become ready");
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return {
    console: createClient(WebhookConsoleService, createConnectTransport({ baseUrl, httpVersion: "2" })),
    pid: String(child.pid),
    pause: () => child.kill("SIGSTOP"),
    resume: () => child.kill("SIGCONT"),
    stop,
  };
}

async function httpRate(url: string): Promise<number> {
  const agent = new Agent({ keepAlive: true });
  const post = () =>
    new Promise<void>((resolve, reject) => {
      const req = request(url, { method: "POST", agent, headers: { "content-type": "application/json" } }, (res) => {
        res.resume();
        res.on("end", resolve);
      });
      req.on("error", reject);
      req.end('{"type":"gate.human_verified"}');
    });
  let sent = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (sent < baselineRequests) {
        sent += 1;
        await post();
      }
    }),
  );
  const rate = baselineRequests / ((performance.now() - started) / 1000);
  agent.destroy();
  return rate;
}

async function updateRate(databaseUrl: string): Promise<number> {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: concurrency });
  await pool.query("create table bench_counter (id int primary key, n bigint not null)");
  await pool.query("insert into bench_counter select id, 0 from generate_series(1, $1) as id", [concurrency]);
  let sent = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async (_, client) => {
      const connection = await pool.connect();
      while (sent < baselineUpdates) {
        sent += 1;
        await connection.query("update bench_counter set n = n + 1 where id = $1", [client + 1]);
      }
      connection.release();
    }),
  );
  const rate = baselineUpdates / ((performance.now() - started) / 1000);
  await pool.query("drop table bench_counter");
  await pool.end();
  return rate;
}

/** A baseline's rate (the lower of its two) and the CPU of each of its operations. */
interface Baseline {
  perS: number;
  httpPerS: number;
  updatePerS: number;
  httpCpuUs: number;
  updateCpuUs: number;
}

interface Round extends Baseline {
  deliveriesPerS: number;
  dispatcherCpuUs: number;
  postgresCpuUs: number;
}

/** Runs `work` and returns what it returned and the CPU `pids()` spent on it, in µs. */
async function costed<T>(pids: () => string[], work: () => Promise<T>): Promise<[T, number]> {
  const before = cpuReading(pids());
  const result = await work();
  return [result, cpuMicrosSince(before, pids())];
}

/**
 * Per round, in an order that swaps each round: the baseline while the dispatcher idles, and the
 * deliveries per second from resuming a paused dispatcher, with `events` waiting on the stream, until
 * all are delivered.
 */
async function measureRounds(
  infrastructure: { postgresUrl: string; natsUrl: string },
  receiver: Receiver,
): Promise<Round[]> {
  const env = {
    SVC_DATABASE_URL: infrastructure.postgresUrl,
    SVC_NATS_URL: infrastructure.natsUrl,
    SVC_EVENT_STREAM: "BENCH",
    SVC_EVENT_SUBJECT_PREFIX: "bench",
    SVC_LOG_LEVEL: "error",
    WEBHOOK_DISPATCH_PORT: String(await freePort()),
  };
  const dispatcher = await startDispatcherProcess(env);
  const bus = await connectEventBus({
    url: infrastructure.natsUrl,
    name: "bench",
    stream: "BENCH",
    subjectPrefix: "bench",
  });
  const db = new pg.Client({
    connectionString: infrastructure.postgresUrl,
    options: "-c search_path=webhook_dispatch",
  });
  const postgres = () => postgresProcesses(infrastructure.postgresUrl);
  try {
    await db.connect();
    await dispatcher.console.addEndpoint({ organizationId: "org-bench", url: receiver.url, types: [] });
    const publishBurst = async (count: number) => {
      const burst = Array.from({ length: count }, () => gateEvent("org-bench"));
      for (let i = 0; i < burst.length; i += 100)
        await Promise.all(burst.slice(i, i + 100).map((event) => publish(bus, event)));
    };
    // Done when Postgres has no delivery left pending. The receiver's count (over IPC) is watched
    // first, so that watching does not load the database under test while the burst runs. Pending
    // rows are found through the due index: counting the delivered ones would scan a table that
    // grows each round, so that later rounds would read slower for the bench's own sake.
    const pending = async () =>
      (await db.query<{ n: number }>("select count(*)::int as n from deliveries where status = 'pending'")).rows[0]!.n;
    const allDelivered = async (received: number, count: number) => {
      const deadline = Date.now() + 120_000;
      while ((await receiver.count()) - received < count || (await pending()) > 0) {
        if (Date.now() > deadline) throw new Error(`${await pending()} deliveries still pending after 120 s`);
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    };
    const baseline = async (): Promise<Baseline> => {
      const [httpPerS, httpCpuUs] = await costed(
        () => [receiver.pid],
        () => httpRate(receiver.url),
      );
      const [updatePerS, updateCpuUs] = await costed(postgres, () => updateRate(infrastructure.postgresUrl));
      log(
        `baseline: bare node:http ${httpPerS.toFixed(0)} requests/s, single-row UPDATE ${updatePerS.toFixed(0)}/s, ${concurrency} in flight each`,
      );
      return {
        perS: Math.min(httpPerS, updatePerS),
        httpPerS,
        updatePerS,
        httpCpuUs: httpCpuUs / baselineRequests,
        updateCpuUs: updateCpuUs / baselineUpdates,
      };
    };

    // A warm-up burst, so that the measured one runs on optimised code, as a long-running process does.
    const receivedBeforeWarmUp = await receiver.count();
    await publishBurst(warmUpEvents);
    await allDelivered(receivedBeforeWarmUp, warmUpEvents);
    // Each measured burst waits on the stream while the dispatcher is paused, so that the time covers
    // the dispatcher's work (consume, store, fan out, sign, send, record) and not the publishing.
    const burst = async () => {
      dispatcher.pause();
      const received = await receiver.count();
      await publishBurst(events);
      const [dispatcherBefore, postgresBefore] = [cpuReading([dispatcher.pid]), cpuReading(postgres())];
      const started = performance.now();
      dispatcher.resume();
      await allDelivered(received, events);
      return {
        deliveriesPerS: events / ((performance.now() - started) / 1000),
        dispatcherCpuUs: cpuMicrosSince(dispatcherBefore, [dispatcher.pid]) / events,
        postgresCpuUs: cpuMicrosSince(postgresBefore, postgres()) / events,
      };
    };
    const measured: Round[] = [];
    for (let round = 1; round <= rounds; round += 1) {
      const burstFirst = round % 2 === 0;
      const first = burstFirst ? await burst() : await baseline();
      const second = burstFirst ? await baseline() : await burst();
      const result = { ...first, ...second } as Round;
      log(
        `round ${round}: baseline ${result.perS.toFixed(0)}/s, delivered ${events} events at ${result.deliveriesPerS.toFixed(0)}/s` +
          ` (CPU per delivery: dispatcher ${result.dispatcherCpuUs.toFixed(0)} µs, PostgreSQL ${result.postgresCpuUs.toFixed(0)} µs)`,
      );
      measured.push(result);
    }
    return measured;
  } finally {
    await db.end();
    await bus.nc.drain();
    await dispatcher.stop();
  }
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), "webhook-bench-"));
  // PostgreSQL runs as the postgres user when we are root and must get into the directory.
  await chmod(dir, 0o755);
  const infrastructure = await startInfrastructure({ dir, durable: false, log });
  const receiver = await startReceiverProcess();
  const stop = stopOnTerminate(async () => {
    receiver.child.kill();
    await infrastructure.stop();
    await rm(dir, { recursive: true, force: true });
  });
  try {
    const measured = await measureRounds(infrastructure, receiver);
    const ratios = measured.map((r) => r.deliveriesPerS / r.perS);
    const middle = (value: (round: Round) => number) => Math.round(median(measured.map(value)));
    process.stdout.write(
      `${JSON.stringify({
        name: "webhook-delivery",
        ratio: Number(median(ratios).toFixed(3)),
        deliveries_per_s: middle((r) => r.deliveriesPerS),
        baseline_per_s: middle((r) => r.perS),
        http_per_s: middle((r) => r.httpPerS),
        update_per_s: middle((r) => r.updatePerS),
        delivery_cpu_us: middle((r) => r.dispatcherCpuUs + r.postgresCpuUs),
        delivery_dispatcher_cpu_us: middle((r) => r.dispatcherCpuUs),
        delivery_postgres_cpu_us: middle((r) => r.postgresCpuUs),
        http_cpu_us: middle((r) => r.httpCpuUs),
        update_cpu_us: middle((r) => r.updateCpuUs),
        concurrency,
        rounds: ratios.map((r) => Number(r.toFixed(3))),
      })}\n`,
    );
  } finally {
    await stop();
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await main();
