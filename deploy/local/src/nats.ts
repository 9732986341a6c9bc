import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdir } from "node:fs/promises";
import { resolve } from "node:path";
import { ensureDebianProgram, freePort, type Log, silent } from "./process-tools.ts";

export type NatsOptions = {
  storeDir: string;
  port?: number;
  log?: Log;
  /**
   * Its own process group (npm start): Ctrl-C in a terminal reaches only the foreground group, and the server
   * must outlive the services, which drain their connections to it while they stop; start.ts stops it last.
   */
  detached?: boolean;
};

export type RunningNats = { url: string; stop(): Promise<void> };

const READY_LINE = "Server is ready";
const START_TIMEOUT_MS = 30_000;

export async function startNats(options: NatsOptions): Promise<RunningNats> {
  const log = options.log ?? silent;
  const executable = await ensureNatsServerInstalled(log);
  const storeDir = resolve(options.storeDir);
  await mkdir(storeDir, { recursive: true });
  const port = options.port ?? (await freePort());

  const server = spawn(executable, ["-js", "-sd", storeDir, "-a", "127.0.0.1", "-p", String(port)], {
    stdio: ["ignore", "pipe", "pipe"],
    detached: options.detached === true,
  });
  const output: string[] = [];

  // nats-server logs "Server is ready" once its client listener is open and JetStream is enabled.
  await new Promise<void>((ready, fail) => {
    const timer = setTimeout(
      () => fail(new Error(`nats-server did not become ready in ${START_TIMEOUT_MS} ms`)),
      START_TIMEOUT_MS,
    );
    const onOutput = (chunk: Buffer) => {
      output.push(chunk.toString());
      if (output.join("").includes(READY_LINE)) {
        clearTimeout(timer);
        ready();
      }
    };
    server.stdout.on("data", onOutput);
    server.stderr.on("data", onOutput);
    server.once("error", (error) => {
      clearTimeout(timer);
      fail(error);
    });
    server.once("exit", (code, signal) => {
      clearTimeout(timer);
      fail(new Error(`nats-server exited before it was ready (code ${code}, signal ${signal})`));
    });
  }).catch((error: unknown) => {
    server.kill("SIGKILL");
    throw new Error(`${String(error)}\n${output.join("")}`.trimEnd(), { cause: error });
  });
  // Keep draining its output so a chatty server never blocks on a full pipe.
  server.stdout.removeAllListeners("data").resume();
  server.stderr.removeAllListeners("data").resume();
  log(`nats-server (JetStream in ${storeDir}) listening on 127.0.0.1:${port}`);

  return {
    url: `nats://127.0.0.1:${port}`,
    stop: async () => {
      if (server.exitCode !== null || server.signalCode !== null) return;
      const exited = once(server, "exit");
      server.kill("SIGTERM");
      await exited;
    },
  };
}

/** Returns the path of nats-server, installing Debian's package when we are root and it is missing. */
export const ensureNatsServerInstalled = (log: Log = silent): Promise<string> =>
  ensureDebianProgram(
    { program: "nats-server", debianPackage: "nats-server", alternative: "put a nats-server 2.9+ binary on PATH" },
    log,
  );
