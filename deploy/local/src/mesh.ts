import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { startIdentityProvider } from "@svc/dev-idp/server";
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

/** How long a supervised process that exited waits before its restart: doubling from `firstMs` up to `maxMs`. */
export interface Backoff {
  firstMs: number;
  maxMs: number;
  /** A process that stayed up this long starts again from `firstMs` after its next exit. */
  resetAfterMs: number;
}

export const defaultBackoff: Backoff = { firstMs: 250, maxMs: 10_000, resetAfterMs: 30_000 };

/** Runs `restart` after `delayMs`; returns what cancels it. Tests pass their own, to restart when they choose. */
export type RestartScheduler = (restart: () => void, delayMs: number) => () => void;

const afterDelay: RestartScheduler = (restart, delayMs) => {
  const timer = setTimeout(restart, delayMs);
  return () => clearTimeout(timer);
};

/** The wait before the next restart, and the one after it, of a process that ran `upForMs` before it exited. */
export function restartDelays(backoff: Backoff, planned: number, upForMs: number): { now: number; next: number } {
  const now = upForMs >= backoff.resetAfterMs ? backoff.firstMs : planned;
  return { now, next: Math.min(now * 2, backoff.maxMs) };
}

export interface Supervision {
  backoff?: Backoff;
  schedule?: RestartScheduler;
  /** Called whenever the set of services that are down changes (empty when all are up again). */
  onStatus?: (down: readonly ServiceName[]) => void;
}

export interface MeshOptions {
  /** Shared settings for every process (SVC_DATABASE_URL, SVC_NATS_URL, SVC_CLOCK_FILE, ...). */
  env: Record<string, string>;
  /** The documented default ports, or free ones (tests, so meshes can run side by side). */
  ports: "default" | "free";
  /** A subset of the mesh; the gateway is always included. */
  only?: ServiceName[];
  log: Log;
  readyTimeoutMs?: number;
  /**
   * Restarts a process that exits on its own, with backoff, as `npm start` does. Without it a process that
   * died stays down, which the durability tests rely on.
   */
  supervise?: Supervision;
  /** Seed of the development identity provider's signing key; a new key at every start without it. */
  devIdpKeySeed?: string;
}

export interface Mesh {
  gatewayUrl: string;
  consoleUrl: string;
  /**
   * The development identity provider, in this process: the issuer of the web app's sign-in and of the
   * console's MintDevSession sessions, and of sandbox humans' sign-in identities.
   */
  devIdpIssuer: string;
  /** The operator credential of the console port, made for this mesh (`GATEWAY_CONSOLE_TOKEN`). */
  consoleToken: string;
  urls: Record<string, string>;
  /** Sends a signal to one process (a kill -9 in a durability test); it stays down, even when supervised. */
  kill(name: ServiceName, signal?: NodeJS.Signals): Promise<void>;
  /** Starts a stopped or killed process again, with the same settings unless `env` overrides some. */
  restart(name: ServiceName, env?: Record<string, string>): Promise<void>;
  stop(): Promise<void>;
  /** The process id of a running service, so a test can kill it from outside, as a crash would. */
  pid(name: ServiceName): number | undefined;
  /** The services that are not running and serving right now. */
  down(): ServiceName[];
}

interface Planned {
  name: ServiceName;
  entry: string;
  env: Record<string, string>;
  port: number;
  child?: ChildProcess;
  exited?: Promise<void>;
  /** Whether the supervisor keeps it running: false once it was stopped on purpose. */
  wanted: boolean;
  up: boolean;
  startedAt: number;
  nextDelayMs: number;
  cancelRestart?: () => void;
}

/** One structured line of the supervisor's own, in the services' log format, about one service. */
const supervisorLine = (level: "info" | "error", service: ServiceName, msg: string, fields: Record<string, unknown>) =>
  JSON.stringify({ time: new Date().toISOString(), level, service, component: "supervisor", msg, ...fields });

export async function startMesh(options: MeshOptions): Promise<Mesh> {
  const layout = meshLayout.filter((s) => s.name === "gateway" || !options.only || options.only.includes(s.name));
  const placed: { name: ServiceName; entry: string; envPrefix: string; port: number; url: string }[] = [];
  for (const service of layout) {
    const port = options.ports === "default" ? service.port : await freePort();
    placed.push({ ...service, port, url: `http://127.0.0.1:${port}` });
  }
  const consolePort = options.ports === "default" ? 9090 : await freePort();
  const consoleToken = options.env.GATEWAY_CONSOLE_TOKEN ?? randomBytes(32).toString("base64url");
  const urls = Object.fromEntries(placed.map((s) => [s.name, s.url]));
  const gatewayPort = placed.find((s) => s.name === "gateway")?.port;
  // Tests restart the gateway under localhost for passkeys: the web app may sign in from either name.
  const appOrigins = [
    ...new Set([
      `http://127.0.0.1:${gatewayPort}`,
      `http://localhost:${gatewayPort}`,
      ...(options.env.GATEWAY_PUBLIC_ORIGIN ? [options.env.GATEWAY_PUBLIC_ORIGIN] : []),
    ]),
  ];
  const devIdp = await startIdentityProvider({
    SVC_CLOCK_FILE: options.env.SVC_CLOCK_FILE,
    DEV_IDP_PORT: options.ports === "default" ? "8070" : "0",
    DEV_IDP_APP_ORIGINS: appOrigins.join(","),
    DEV_IDP_KEY_SEED: options.devIdpKeySeed,
  });
  const signIn = signInEnv(devIdp.issuer);

  // Each process learns every other's address as <ITS_PREFIX>_<OTHER_PREFIX>_URL, e.g. GATEWAY_SIGNING_URL.
  const addressBook: Record<string, string> = {};
  for (const consumer of placed)
    for (const provider of placed) addressBook[`${consumer.envPrefix}_${provider.envPrefix}_URL`] = provider.url;

  const backoff = options.supervise?.backoff ?? defaultBackoff;
  const schedule = options.supervise?.schedule ?? afterDelay;
  const planned: Planned[] = placed.map((service) => ({
    name: service.name,
    entry: join(repositoryRoot, service.entry),
    port: service.port,
    wanted: true,
    up: false,
    startedAt: 0,
    nextDelayMs: backoff.firstMs,
    env: {
      ...addressBook,
      ...signIn,
      ...options.env,
      [`${service.envPrefix}_PORT`]: String(service.port),
      ...(service.name === "gateway"
        ? { GATEWAY_CONSOLE_PORT: String(consolePort), GATEWAY_CONSOLE_TOKEN: consoleToken }
        : {}),
    },
  }));

  // Supervision begins once the whole mesh has started: a process that fails its first start fails the start.
  let supervising = false;
  let stopping = false;
  let reportedDown = "";
  const reportStatus = () => {
    if (!supervising || stopping) return;
    const down = planned.filter((p) => !p.up).map((p) => p.name);
    if (down.join() === reportedDown) return;
    reportedDown = down.join();
    options.supervise?.onStatus?.(down);
  };

  const onExit = (p: Planned, child: ChildProcess, code: number | null, signal: NodeJS.Signals | null) => {
    if (p.child !== child) return;
    p.up = false;
    if (!supervising || !options.supervise || stopping || !p.wanted) return reportStatus();
    const { now: delay, next } = restartDelays(backoff, p.nextDelayMs, performance.now() - p.startedAt);
    p.nextDelayMs = next;
    options.log(
      supervisorLine("error", p.name, "exited unexpectedly; restarting", {
        exit_code: code,
        signal,
        restart_in_ms: delay,
      }),
    );
    reportStatus();
    p.cancelRestart = schedule(() => {
      p.cancelRestart = undefined;
      if (stopping || !p.wanted) return;
      launch(p).then(
        () => {
          options.log(supervisorLine("info", p.name, "restarted", { pid: p.child?.pid }));
          reportStatus();
        },
        // A restart that exits before it is ready was handled by onExit (the next, longer wait); one that
        // hangs is killed, and onExit schedules the next attempt.
        () => {
          if (p.child?.exitCode === null && p.child.signalCode === null) p.child.kill("SIGKILL");
        },
      );
    }, delay);
  };

  const launch = async (p: Planned) => {
    const child = spawn(process.execPath, [p.entry], {
      env: { ...process.env, ...p.env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    const exited = new Promise<void>((resolve) =>
      child.once("exit", (code, signal) => {
        onExit(p, child, code, signal);
        resolve();
      }),
    );
    p.child = child;
    p.exited = exited;
    p.startedAt = performance.now();
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
    p.up = true;
  };

  const started: Planned[] = [];
  const stopAll = async () => {
    stopping = true;
    for (const p of planned) p.cancelRestart?.();
    for (const p of [...started].reverse()) {
      if (p.child && p.child.exitCode === null && p.child.signalCode === null) {
        p.child.kill("SIGTERM");
        const forced = setTimeout(() => p.child?.kill("SIGKILL"), 10_000);
        await p.exited;
        clearTimeout(forced);
      }
    }
    const closed = new Promise((resolve) => devIdp.server.close(resolve));
    devIdp.server.closeAllConnections();
    await closed;
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
  supervising = true;
  reportStatus();

  const find = (name: ServiceName) => {
    const p = planned.find((x) => x.name === name);
    if (!p) throw new Error(`${name} is not part of this mesh`);
    return p;
  };
  return {
    gatewayUrl: `http://127.0.0.1:${find("gateway").port}`,
    consoleUrl: `http://127.0.0.1:${consolePort}`,
    devIdpIssuer: devIdp.issuer,
    consoleToken,
    urls,
    async kill(name, signal = "SIGKILL") {
      const p = find(name);
      p.wanted = false;
      p.cancelRestart?.();
      p.child?.kill(signal);
      await p.exited;
    },
    async restart(name, env = {}) {
      const p = find(name);
      Object.assign(p.env, env);
      p.wanted = false;
      p.cancelRestart?.();
      if (p.child && p.child.exitCode === null && p.child.signalCode === null) {
        p.child.kill("SIGTERM");
        await p.exited;
      }
      await launch(p);
      p.wanted = true;
      p.nextDelayMs = backoff.firstMs;
      reportStatus();
    },
    stop: stopAll,
    pid: (name) => {
      const child = find(name).child;
      return child?.exitCode === null && child.signalCode === null ? child.pid : undefined;
    },
    down: () => planned.filter((p) => !p.up).map((p) => p.name),
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

/** What the gateway and account need to sign people in with the development identity provider at `issuer`. */
export const signInEnv = (issuer: string): Record<string, string> => ({
  GATEWAY_OIDC_ISSUER: issuer,
  GATEWAY_OIDC_JWKS_URL: `${issuer}/.well-known/jwks.json`,
  GATEWAY_OIDC_CLIENT_ID: "svc-app",
  GATEWAY_DEV_IDP_ISSUER: issuer,
  ACCOUNT_DEV_ISSUER: issuer,
});
