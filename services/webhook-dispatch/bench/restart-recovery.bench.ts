/**
 * How long deliveries held by a dispatcher killed with SIGKILL take to arrive after the restart, for
 * N = 200 and N = 2000 claims. The dead dispatcher held all N (part in flight to a receiver that does
 * not answer, the rest queued) under leases of minutes; the next one finds its liveness lock dropped
 * and gives them back at once. Prints, as one JSON line on stdout (progress on stderr), the time from
 * the kill to the new process being ready and from ready to the last delivery recorded, each the median
 * of three rounds. Each round also delivers N fresh events through the running dispatcher (paused while
 * they are published, then resumed), in an order that swaps each round: `n*_recovery_ratio` is the
 * median of the rounds' recovery time over that plain delivery's, and `n*_recovery_cpu_us` and
 * `n*_plain_cpu_us` the dispatcher's and PostgreSQL's CPU per delivery of each, from /proc (the
 * recovery's from ready, per delivery made after it: the new process starts sending before). How long N
 * deliveries take at all moves with the machine's load; the ratio and the CPU say what the recovery adds.
 * Starts its own PostgreSQL and nats-server in a temporary directory and stops by itself.
 *
 *   node services/webhook-dispatch/bench/restart-recovery.bench.ts
 */
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { chmod, mkdtemp, rm } from "node:fs/promises";
import { createServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
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

const sizes = [200, 2000];
const rounds = 3;
/** A claim holds 16 rounds of attempts per endpoint: enough concurrency that one endpoint holds all N. */
const roundsAhead = 16;
const log = (line: string) => process.stderr.write(`${line}\n`);
const entry = fileURLToPath(new URL("../src/server.ts", import.meta.url));

/** An endpoint that holds every request unanswered until told to accept, then answers 204 at once. */
async function startReceiver() {
  let accepting = false;
  const waiting: ServerResponse[] = [];
  const server = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      if (accepting) res.writeHead(204).end();
      else waiting.push(res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhooks`,
    hold() {
      accepting = false;
    },
    accept() {
      accepting = true;
      for (const res of waiting.splice(0)) res.destroy();
    },
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

async function startDispatcher(env: Record<string, string>): Promise<ChildProcess> {
  const child = spawn(process.execPath, [entry], { env: { ...process.env, ...env }, stdio: ["ignore", 2, 2] });
  for (let tries = 0; ; tries += 1) {
    const status = (await fetch(`http://127.0.0.1:${env.WEBHOOK_DISPATCH_PORT}/readyz`).catch(() => undefined))?.status;
    if (status === 200) return child;
    if (tries > 2000) throw new Error("webhook-dispatch did not become ready");
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

async function measure(infrastructure: { postgresUrl: string; natsUrl: string }, n: number) {
  const stream = `RECOVERY${n}`;
  const concurrency = String(Math.max(4, Math.ceil(n / roundsAhead)));
  const env = {
    SVC_DATABASE_URL: infrastructure.postgresUrl,
    SVC_NATS_URL: infrastructure.natsUrl,
    SVC_EVENT_STREAM: stream,
    SVC_EVENT_SUBJECT_PREFIX: stream.toLowerCase(),
    SVC_LOG_LEVEL: "error",
    WEBHOOK_DISPATCH_PORT: String(await freePort()),
    WEBHOOK_DISPATCH_CONSUMER_NAME: `recovery-${n}`,
    WEBHOOK_DISPATCH_PER_ENDPOINT_CONCURRENCY: concurrency,
    WEBHOOK_DISPATCH_GLOBAL_CONCURRENCY: concurrency,
    WEBHOOK_DISPATCH_DELIVERY_TIMEOUT: "60s",
  };
  const receiver = await startReceiver();
  const db = new pg.Client({
    connectionString: infrastructure.postgresUrl,
    options: "-c search_path=webhook_dispatch",
  });
  await db.connect();
  const bus = await connectEventBus({
    url: infrastructure.natsUrl,
    name: "recovery-bench",
    stream,
    subjectPrefix: stream.toLowerCase(),
  });
  let child = await startDispatcher(env);
  const serverProcesses = () => [String(child.pid), ...postgresProcesses(infrastructure.postgresUrl)];
  try {
    const console = createClient(
      WebhookConsoleService,
      createConnectTransport({ baseUrl: `http://127.0.0.1:${env.WEBHOOK_DISPATCH_PORT}`, httpVersion: "2" }),
    );
    const organizationId = `org-recovery-${n}`;
    const { endpointId } = await console.addEndpoint({ organizationId, url: receiver.url, types: [] });
    const count = async (where: string) =>
      (
        await db.query<{ n: number }>(`select count(*)::int as n from deliveries where endpoint_id = $1 and ${where}`, [
          endpointId,
        ])
      ).rows[0]!.n;
    const publishBurst = async () => {
      const burst = Array.from({ length: n }, () => gateEvent(organizationId));
      for (let i = 0; i < burst.length; i += 100)
        await Promise.all(burst.slice(i, i + 100).map((e) => publish(bus, e)));
    };
    let deliveredSoFar = 0;
    /** Milliseconds until every delivery so far is recorded as delivered, from now. */
    const untilAllDelivered = async () => {
      const started = performance.now();
      while ((await count(`status = 'delivered'`)) < deliveredSoFar) {
        if (performance.now() - started > 300_000) throw new Error(`N=${n}: not all delivered after 300 s`);
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      return performance.now() - started;
    };

    /** N claims held by a dispatcher that is then killed; the next one's time from ready to all delivered. */
    const recovery = async () => {
      receiver.hold();
      await publishBurst();
      deliveredSoFar += n;
      while ((await count(`status = 'pending' and claimed_by is not null`)) < n)
        await new Promise((resolve) => setTimeout(resolve, 20));
      log(`N=${n}: all claimed; kill -9`);
      child.kill("SIGKILL");
      await once(child, "exit");
      receiver.accept();
      const killedAt = performance.now();
      child = await startDispatcher(env);
      const readyAt = performance.now();
      const before = cpuReading(serverProcesses());
      // The new process gives claims back and sends before it answers ready: its CPU is divided by the
      // deliveries made after, not by N.
      const afterReady = deliveredSoFar - (await count(`status = 'delivered'`));
      const readyToDeliveredMs = await untilAllDelivered();
      return {
        killToReadyMs: readyAt - killedAt,
        readyToDeliveredMs,
        cpuUs: cpuMicrosSince(before, serverProcesses()) / Math.max(1, afterReady),
      };
    };
    /** N fresh events waiting on the stream while the running dispatcher is paused; its time to deliver them. */
    const plain = async () => {
      receiver.accept();
      child.kill("SIGSTOP");
      await publishBurst();
      deliveredSoFar += n;
      const before = cpuReading(serverProcesses());
      child.kill("SIGCONT");
      const deliveredMs = await untilAllDelivered();
      return { deliveredMs, cpuUs: cpuMicrosSince(before, serverProcesses()) / n };
    };

    const measured: { recovered: Awaited<ReturnType<typeof recovery>>; plain: Awaited<ReturnType<typeof plain>> }[] =
      [];
    for (let round = 0; round < rounds; round++) {
      const plainFirst = round % 2 === 1;
      const first = plainFirst ? await plain() : undefined;
      const recovered = await recovery();
      measured.push({ recovered, plain: first ?? (await plain()) });
    }
    const middle = (value: (round: (typeof measured)[number]) => number) => Math.round(median(measured.map(value)));
    return {
      killToReadyMs: middle((r) => r.recovered.killToReadyMs),
      readyToDeliveredMs: middle((r) => r.recovered.readyToDeliveredMs),
      plainDeliveredMs: middle((r) => r.plain.deliveredMs),
      recoveryRatio: Number(
        median(measured.map((r) => r.recovered.readyToDeliveredMs / r.plain.deliveredMs)).toFixed(2),
      ),
      recoveryCpuUs: middle((r) => r.recovered.cpuUs),
      plainCpuUs: middle((r) => r.plain.cpuUs),
    };
  } finally {
    child.kill("SIGCONT");
    child.kill("SIGTERM");
    await once(child, "exit");
    await bus.nc.drain();
    await db.end();
    await receiver.close();
  }
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), "webhook-recovery-bench-"));
  // PostgreSQL runs as the postgres user when we are root and must get into the directory.
  await chmod(dir, 0o755);
  const infrastructure = await startInfrastructure({ dir, durable: false, log });
  const stop = stopOnTerminate(async () => {
    await infrastructure.stop();
    await rm(dir, { recursive: true, force: true });
  });
  try {
    const result: Record<string, unknown> = { name: "webhook-restart-recovery", rounds };
    for (const n of sizes) {
      const measured = await measure(infrastructure, n);
      log(`N=${n}: ${JSON.stringify(measured)}`);
      result[`n${n}_kill_to_ready_ms`] = measured.killToReadyMs;
      result[`n${n}_ready_to_delivered_ms`] = measured.readyToDeliveredMs;
      result[`n${n}_plain_delivered_ms`] = measured.plainDeliveredMs;
      result[`n${n}_recovery_ratio`] = measured.recoveryRatio;
      result[`n${n}_recovery_cpu_us`] = measured.recoveryCpuUs;
      result[`n${n}_plain_cpu_us`] = measured.plainCpuUs;
    }
    process.stdout.write(`${JSON.stringify(result)}\n`);
  } finally {
    await stop();
  }
}

await main();
