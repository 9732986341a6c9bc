import { createServer as createHttp1Server } from "node:http";
import { createServer as createHttp2Server, type Http2Session } from "node:http2";
import { type AddressInfo, createServer as createTcpServer, type Socket } from "node:net";
import { Code, ConnectError, type ConnectRouter } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { healthPathPrefix, healthRoutes } from "./health.ts";
import { createLogger, type Logger } from "./logger.ts";
import { metricsText } from "./metrics.ts";
import type { NodeServerRequest, NodeServerResponse } from "./node-handler.ts";
import { malformedRequestsAreInvalid, sendRpcError } from "./rpc-errors.ts";
import { rpcServerMetrics } from "./rpc-metrics.ts";
import { rpcServerTracing } from "./rpc-tracing.ts";
import { UnaryCalls } from "./unary-handler.ts";

export interface ServiceOptions {
  name: string;
  host: string;
  port: number;
  logger: Logger;
  routes: (router: ConnectRouter) => void;
  /** Throws when a dependency (database, NATS) is unreachable; /readyz answers 503 then. */
  ready: () => Promise<void>;
  /** Extra plain-HTTP handler tried before the 404 (for example the gateway's public API). */
  fallback?: (req: NodeServerRequest, res: NodeServerResponse) => boolean;
  /** Releases what the service holds (NATS drain, ORM close) after the requests in flight ended. */
  onStop: () => Promise<void>;
  /** How long a stop waits for requests in flight before it cuts them (default 20 s, inside Kubernetes' 30 s grace). */
  drainTimeoutMs?: number;
  /**
   * Checks the caller of every call but the probes and /metrics (the gateway's console: the operator credential). A call
   * it refuses is answered `unauthenticated` in its own protocol (Connect, gRPC or gRPC-Web) with `refusal`
   * as the message, and reaches nothing.
   */
  authenticate?: { check: (req: NodeServerRequest) => boolean; refusal: string };
  /**
   * Whether the server logs "stopped" itself (default). A process with two servers (the gateway) logs its own,
   * once, after both, so a supervisor reads one "stopped" line per process.
   */
  logStopped?: boolean;
}

export interface RunningService {
  port: number;
  url: string;
  stop(): Promise<void>;
}

const http2Preface = Buffer.from("PRI * HTTP/2.0");

/**
 * Serves Connect RPC on h2c and, on the same port, HTTP/1.1 for probes and tools that speak only
 * HTTP/1.1 (kubelet's httpGet probes among them): the first bytes of a connection decide.
 */
export async function serveConnect(options: ServiceOptions): Promise<RunningService> {
  const { logger } = options;
  const stopped = new AbortController();
  const interceptors = [...rpcServerTracing(), rpcServerMetrics, ...malformedRequestsAreInvalid.interceptors];
  const unaryCalls = new UnaryCalls(interceptors);
  const handler = connectNodeAdapter({
    routes: (router) => {
      options.routes(unaryCalls.recording(router));
      const served = new Set(router.handlers.map((h) => h.service.typeName));
      healthRoutes({ served, ready: options.ready, stopping: stopped.signal })(router);
    },
    ...malformedRequestsAreInvalid,
    interceptors,
    fallback: (req, res) => {
      const path = (req.url ?? "").split("?")[0];
      if (path === "/healthz") return sendJson(res, 200, { status: "ok", service: options.name });
      if (path === "/readyz") {
        options.ready().then(
          () => sendJson(res, 200, { status: "ready", service: options.name }),
          (error: Error) => sendJson(res, 503, { status: "unavailable", service: options.name, error: error.message }),
        );
        return;
      }
      if (path === "/metrics") {
        metricsText().then(
          ({ contentType, text }) => {
            res.writeHead(200, { "content-type": contentType, "content-length": Buffer.byteLength(text) });
            res.end(text);
          },
          (error: Error) => sendJson(res, 500, { error: "metrics_failed", message: error.message }),
        );
        return;
      }
      if (options.fallback?.(req, res)) return;
      sendJson(res, 404, { error: "not_found" });
    },
  });
  let inFlight = 0;
  let drained: (() => void) | undefined;
  const counted: typeof handler = (req, res) => {
    inFlight++;
    res.once("close", () => {
      if (--inFlight === 0) drained?.();
    });
    const path = (req.url ?? "").split("?")[0] ?? "";
    // The probes and Prometheus' scrape reach the server without the console's credential.
    const probe = path === "/healthz" || path === "/readyz" || path === "/metrics" || path.startsWith(healthPathPrefix);
    if (options.authenticate && !probe && !options.authenticate.check(req))
      return sendRpcError(req, res, new ConnectError(options.authenticate.refusal, Code.Unauthenticated));
    if (!unaryCalls.answers(req, res)) handler(req, res);
  };
  const h2 = createHttp2Server({}, counted);
  const h2Sessions = new Set<Http2Session>();
  h2.on("session", (session) => {
    h2Sessions.add(session);
    session.once("close", () => h2Sessions.delete(session));
  });
  const h1 = createHttp1Server(counted);
  const sockets = new Set<Socket>();
  const tcp = createTcpServer((socket) => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
    socket.once("readable", () => {
      const head: Buffer | null = socket.read(http2Preface.length) ?? socket.read();
      if (head === null) return;
      socket.unshift(head);
      (head.subarray(0, http2Preface.length).equals(http2Preface) ? h2 : h1).emit("connection", socket);
    });
  });
  await new Promise<void>((resolve, reject) => {
    tcp.once("error", reject);
    tcp.listen(options.port, options.host, () => resolve());
  });
  const port = (tcp.address() as AddressInfo).port;
  logger.info("listening", { host: options.host, port });

  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      logger.info("stopping", { inFlight });
      // Health answers NOT_SERVING from now on, and Watch streams send it and end, so they hold up no drain.
      stopped.abort();
      // No new connections, no new HTTP/2 streams (GOAWAY); requests already running finish first,
      // so a rolling update neither cuts a call nor closes the database under its handler.
      tcp.close();
      // A closed session ends its socket once its last stream's frames are written: destroying the socket
      // when the handler finished could cut the response's end (a gRPC client then reads CANCEL, not OK).
      const sessionsClosed = Promise.all(
        [...h2Sessions].map((session) => new Promise<void>((done) => session.close(() => done()))),
      );
      h1.closeIdleConnections();
      const deadline = new Promise<void>((resolve) => setTimeout(resolve, options.drainTimeoutMs ?? 20_000).unref());
      if (inFlight > 0) await Promise.race([new Promise<void>((resolve) => (drained = resolve)), deadline]);
      await Promise.race([sessionsClosed, deadline]);
      for (const socket of sockets) socket.destroy();
      await options.onStop();
      if (options.logStopped !== false) logger.info("stopped");
    })());
  return { port, url: `http://${options.host}:${port}`, stop };
}

export function sendJson(res: NodeServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
  res.end(text);
}

/**
 * Runs `start` when the file is the process's main module, and stops cleanly on SIGTERM or SIGINT; with
 * `--migrate-only` runs `migrate` instead and exits (the migrate Job). Every failure, even one no handler
 * caught, is one structured line at error before the exit, never Node's own unstructured print: a
 * supervisor (npm start, the kubelet) restarts the process and the log says why.
 */
export function runAsMain(
  importMetaUrl: string,
  name: string,
  start: () => Promise<RunningService>,
  migrate: () => Promise<void>,
): void {
  if (process.argv[1] === undefined || importMetaUrl !== new URL(`file://${process.argv[1]}`).href) return;
  const logger = createLogger(name);
  const fail = (msg: string) => (error: unknown) => {
    logger.error(msg, { error });
    process.exit(1);
  };
  process.on("uncaughtException", fail("uncaught exception"));
  process.on("unhandledRejection", fail("unhandled rejection"));
  if (process.argv.includes("--migrate-only")) {
    migrate().then(() => {
      logger.info("migrated");
      process.exit(0);
    }, fail("migration failed"));
    return;
  }
  start().then(
    (service) => {
      const shutdown = () => {
        service.stop().then(() => process.exit(0), fail("stop failed"));
      };
      process.once("SIGTERM", shutdown);
      process.once("SIGINT", shutdown);
    },
    // The message alone: a configuration error lists every problem in it, and its stack says nothing more.
    (error: unknown) => fail("start failed")(error instanceof Error ? error.message : error),
  );
}
