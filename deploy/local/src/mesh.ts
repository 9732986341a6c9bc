import { type ChildProcess, spawn } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { freePort, type Log } from "./process-tools.ts";

const repositoryRoot = fileURLToPath(new URL("../../../", import.meta.url));

/** Every process of the mesh, in start order: a service starts after those it calls. */
export const meshLayout = [
  { name: "signing", entry: "services/signing/src/server.ts", envPrefix: "SIGNING", port: 9091 },
  { name: "account", entry: "services/account/src/server.ts", envPrefix: "ACCOUNT", port: 9093 },
  { name: "gate", entry: "services/gate/src/server.ts", envPrefix: "GATE", port: 9092 },
  { name: "agentlink", entry: "services/agentlink/src/server.ts", envPrefix: "AGENTLINK", port: 9094 },
  {
    name: "webhook-dispatch",
    entry: "services/webhook-dispatch/src/server.ts",
    envPrefix: "WEBHOOK_DISPATCH",
    port: 9095,
  },
  { name: "gateway", entry: "gateway/src/server.ts", envPrefix: "GATEWAY", port: 8080, consolePort: 9090 },
] as const;

export type ServiceName = (typeof meshLayout)[number]["name"];

export interface MeshOptions {
  /** Shared settings for every process (SVC_DATABASE_URL, SVC_NATS_URL, SVC_CLOCK_FILE, ...). */
  env: Record<string, string>;
  /** The documented default ports, or free ones (tests, so meshes can run side by side). */
  ports: "default" | "free";
  /** A subset of the mesh; the gateway is always included. */
  only?: ServiceName[];
  log: Log;
  readyTimeoutMs?: number;
}

export interface Mesh {
  gatewayUrl: string;
  consoleUrl: string;
  urls: Record<string, string>;
  /** Sends a signal to one process (a kill -9 in a durability test) without restarting it. */
  kill(name: ServiceName, signal?: NodeJS.Signals): Promise<void>;
  /** Starts a stopped or killed process again, with the same settings unless `env` overrides some. */
  restart(name: ServiceName, env?: Record<string, string>): Promise<void>;
  stop(): Promise<void>;
}

interface Planned {
  name: ServiceName;
  entry: string;
  env: Record<string, string>;
  port: number;
  child?: ChildProcess;
  exited?: Promise<void>;
}

export async function startMesh(options: MeshOptions): Promise<Mesh> {
  const layout = meshLayout.filter((s) => s.name === "gateway" || !options.only || options.only.includes(s.name));
  const placed: { name: ServiceName; entry: string; envPrefix: string; port: number; url: string }[] = [];
  for (const service of layout) {
    const port = options.ports === "default" ? service.port : await freePort();
    placed.push({ ...service, port, url: `http://127.0.0.1:${port}` });
  }
  const consolePort = options.ports === "default" ? 9090 : await freePort();
  const urls = Object.fromEntries(placed.map((s) => [s.name, s.url]));

  // Each process learns every other's address as <ITS_PREFIX>_<OTHER_PREFIX>_URL, e.g. GATEWAY_SIGNING_URL.
  const addressBook: Record<string, string> = {};
  for (const consumer of placed)
    for (const provider of placed) addressBook[`${consumer.envPrefix}_${provider.envPrefix}_URL`] = provider.url;

  const planned: Planned[] = placed.map((service) => ({
    name: service.name,
    entry: join(repositoryRoot, service.entry),
    port: service.port,
    env: {
      ...addressBook,
      ...options.env,
      [`${service.envPrefix}_PORT`]: String(service.port),
      ...(service.name === "gateway" ? { GATEWAY_CONSOLE_PORT: String(consolePort) } : {}),
    },
  }));

  const launch = async (p: Planned) => {
    const child = spawn(process.execPath, [p.entry], {
      env: { ...process.env, ...p.env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    p.child = child;
    p.exited = exited;
    const recent: string[] = [];
    const forward = (chunk: Buffer) => {
      for (const line of chunk.toString().split("\n")) {
        if (!line) continue;
        recent.push(line);
        if (recent.length > 40) recent.shift();
        options.log(`[${p.name}] ${line}`);
      }
    };
    child.stdout.on("data", forward);
    child.stderr.on("data", forward);
    await waitUntilReady(p, exited, options.readyTimeoutMs ?? 30_000, () => recent.join("\n"));
  };

  const started: Planned[] = [];
  const stopAll = async () => {
    for (const p of [...started].reverse()) {
      if (p.child && p.child.exitCode === null && p.child.signalCode === null) {
        p.child.kill("SIGTERM");
        const forced = setTimeout(() => p.child?.kill("SIGKILL"), 10_000);
        await p.exited;
        clearTimeout(forced);
      }
    }
  };
  try {
    for (const p of planned) {
      started.push(p);
      await launch(p);
    }
  } catch (error) {
    await stopAll();
    throw error;
  }

  const find = (name: ServiceName) => {
    const p = planned.find((x) => x.name === name);
    if (!p) throw new Error(`${name} is not part of this mesh`);
    return p;
  };
  return {
    gatewayUrl: `http://127.0.0.1:${find("gateway").port}`,
    consoleUrl: `http://127.0.0.1:${consolePort}`,
    urls,
    async kill(name, signal = "SIGKILL") {
      const p = find(name);
      p.child?.kill(signal);
      await p.exited;
    },
    async restart(name, env = {}) {
      const p = find(name);
      Object.assign(p.env, env);
      if (p.child && p.child.exitCode === null && p.child.signalCode === null) {
        p.child.kill("SIGTERM");
        await p.exited;
      }
      await launch(p);
    },
    stop: stopAll,
  };
}

async function waitUntilReady(
  p: Planned,
  exit: Promise<void>,
  timeoutMs: number,
  recentLogs: () => string,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let exited = false;
  void exit.then(() => {
    exited = true;
  });
  while (Date.now() < deadline) {
    if (exited) throw new Error(`${p.name} exited during start (code ${p.child?.exitCode}):\n${recentLogs()}`);
    try {
      const response = await fetch(`http://127.0.0.1:${p.port}/readyz`, { signal: AbortSignal.timeout(1000) });
      if (response.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`${p.name} was not ready within ${timeoutMs} ms:\n${recentLogs()}`);
}
