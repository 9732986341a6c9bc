import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import type { ReadableStream as WebReadableStream } from "node:stream/web";
import { type Clock, inHttpServerSpan, type Logger, type Span } from "@svc/platform";
import { corsResponseHeaders, preflightHeaders, servesBrowsers } from "./cors.ts";
import { eventStreams, operationDurations, operationRequests } from "./edge-metrics.ts";
import { envelope } from "./envelope.ts";
import { InputValidationError, unhandledBody } from "./errors.ts";
import { writeEventStream } from "./event-stream.ts";
import type { FetchRoute } from "./fetch-route.ts";
import { type RequestContext, runPipeline, type Stage } from "./pipeline.ts";
import { type RawReply, type RawRoute, rawBodyLimit } from "./raw-route.ts";
import { basePath, pathPattern, type Route } from "./route.ts";

export { basePath };

export interface PublicServerOptions<Services> {
  host: string;
  port: number;
  /** The operations under `{base_url}`, each run through `stages`. */
  routes: readonly Route<Services>[];
  /** Replies outside the envelope (key set, OpenAPI document, QR codes, pages), by their path on the origin. */
  rawRoutes?: readonly RawRoute[];
  /** Paths answered by a web-standard handler (the MCP server), by their path on the origin. */
  fetchRoutes?: readonly FetchRoute[];
  /** The pipeline every operation runs through, outermost first (see `pipeline.ts`). */
  stages: readonly Stage[];
  /** What the routes' handlers reach (the gateway's `GatewayServices`), passed to each untouched. */
  services: Services;
  clock: Clock;
  logger: Logger;
  /** Throws when a dependency is unreachable; `/readyz` answers 503 then. */
  ready: () => Promise<void>;
  /** Each service behind the gateway, up or down, for `/readyz?mesh=1`. */
  meshHealth?: () => Promise<Record<string, "up" | "down">>;
}

export interface RunningServer {
  port: number;
  url: string;
  stop(): Promise<void>;
}

/**
 * On every answer (decision "Caching headers"): nothing that may carry a token or a key is stored by a cache,
 * and no browser sniffs a JSON answer into something it runs. A raw route that may be cached (the key set,
 * the widget, the OpenAPI document) sets its own `cache-control` over the first.
 */
const baselineHeaders = { "cache-control": "no-store", "x-content-type-options": "nosniff" } as const;

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    ...baselineHeaders,
    ...headers,
    "content-type": "application/json; charset=utf-8",
    "content-length": Buffer.byteLength(text),
  });
  res.end(text);
}

function sendRaw(res: ServerResponse, reply: RawReply): void {
  res
    .writeHead(reply.status, {
      ...baselineHeaders,
      ...reply.headers,
      "content-length": Buffer.byteLength(reply.body),
    })
    .end(reply.body);
}

const badRequest = (message: string) =>
  new InputValidationError({}, [{ propertyPath: "", invalidValue: null, message }]).toBody();

/**
 * A raw POST route's body as text, or `undefined` when it is larger than `limit` (read to its
 * end but not kept, so the connection stays usable for the 413).
 */
async function readRawBody(req: IncomingMessage, limit: number): Promise<string | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size <= limit) chunks.push(chunk);
  }
  return size > limit ? undefined : Buffer.concat(chunks).toString("utf8");
}

/**
 * A body read no further than one chunk past `limit`: a longer one (even without a length) is never held whole,
 * and what was read shows that it is longer. `undefined` when the client went away before the body ended.
 */
function readAtMost(req: IncomingMessage, limit: number): Promise<Buffer<ArrayBuffer> | undefined> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const settle = (read: boolean) => {
      req.off("data", take).off("end", ended).off("error", gone).off("close", gone);
      resolve(read ? Buffer.concat(chunks, size) : undefined);
    };
    const ended = () => settle(true);
    const gone = () => settle(false);
    const take = (chunk: Buffer) => {
      chunks.push(chunk);
      size += chunk.length;
      if (size <= limit) return;
      req.pause();
      ended();
    };
    req.on("data", take).on("end", ended).on("error", gone).on("close", gone);
  });
}

/**
 * A fetch route's answer to a Node request: the request as a web `Request` (aborted when the client goes; its
 * body read first and handed over as bytes, not copied into the `Request`), the `Response` sent back whole, or
 * streamed when it is an event stream (an MCP answer that reports progress).
 */
async function serveFetch(req: IncomingMessage, res: ServerResponse, url: URL, route: FetchRoute): Promise<void> {
  const gone = new AbortController();
  res.once("close", () => {
    if (!res.writableFinished) gone.abort();
  });
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headersDistinct))
    for (const one of value ?? []) headers.append(name, one);
  const method = req.method ?? "GET";
  const hasBody = method !== "GET" && method !== "HEAD";
  const body = hasBody ? await readAtMost(req, route.bodyLimit) : undefined;
  // The client went away before the end of its body: no one is left to answer.
  if (hasBody && body === undefined) return void res.destroy();
  const request = new Request(url, { method, headers, signal: gone.signal });
  const response = await route.fetch(request, req, body);
  const responseHeaders: Record<string, string> = { ...baselineHeaders };
  response.headers.forEach((value, name) => {
    responseHeaders[name] = value;
  });
  // The rest of a body too long to read is not worth reading: answer, then close.
  if (!req.complete) responseHeaders.connection = "close";
  if (!response.body) return void res.writeHead(response.status, responseHeaders).end();
  if (!response.headers.get("content-type")?.startsWith("text/event-stream")) {
    const whole = Buffer.from(await response.arrayBuffer());
    return void res.writeHead(response.status, { ...responseHeaders, "content-length": whole.length }).end(whole);
  }
  res.writeHead(response.status, responseHeaders);
  // A client that goes away mid-stream ends the pipeline early: nothing is left to answer.
  await pipeline(Readable.fromWeb(response.body as WebReadableStream<Uint8Array>), res).catch(() => {});
}

/** What answers one method at one path: an operation, through the pipeline, a raw reply or a fetch route. */
type Target =
  | { kind: "operation"; route: Route }
  | { kind: "raw"; route: RawRoute }
  | { kind: "fetch"; route: FetchRoute };

/**
 * The route table by path, then method, so a known path with another method can say which it takes.
 * Operations sit below `{base_url}`; raw routes name their whole path, or a pattern tried in order
 * after every exact path.
 */
function routeTable(routes: readonly Route[], rawRoutes: readonly RawRoute[], fetchRoutes: readonly FetchRoute[]) {
  const exact = new Map<string, Map<string, Target>>();
  const patterns: { pattern: RegExp; methods: Map<string, Target> }[] = [];
  const add = (path: string, method: string, target: Target) => {
    const methods = exact.get(path) ?? new Map<string, Target>();
    if (methods.has(method)) throw new Error(`two routes for ${method} ${path}`);
    methods.set(method, target);
    exact.set(path, methods);
  };
  for (const route of routes) {
    const target: Target = { kind: "operation", route };
    if (!route.path.includes("{")) {
      add(`${basePath}${route.path}`, route.method, target);
      continue;
    }
    const pattern = pathPattern(route.path);
    const family = patterns.find((p) => p.pattern.source === pattern.source);
    if (family) family.methods.set(route.method, target);
    else patterns.push({ pattern, methods: new Map([[route.method, target]]) });
  }
  for (const route of fetchRoutes)
    for (const method of route.methods) add(route.path, method, { kind: "fetch", route });
  for (const route of rawRoutes) {
    const target: Target = { kind: "raw", route };
    const methods: [string, Target][] = [[route.method, target]];
    if (route.method === "GET") methods.push(["HEAD", target]);
    if (route.path instanceof RegExp) {
      const family = patterns.find((p) => p.pattern.source === (route.path as RegExp).source);
      if (family) for (const [method, t] of methods) family.methods.set(method, t);
      else patterns.push({ pattern: route.path, methods: new Map(methods) });
    } else for (const [method, t] of methods) add(route.path, method, t);
  }
  return (path: string): Map<string, Target> | undefined =>
    exact.get(path) ?? patterns.find((p) => p.pattern.test(path))?.methods;
}

/**
 * The public HTTP/1.1 server: the probes, then the route table. A path that names no route is a plain
 * HTTP 404 (405 for a known path with another method): no operation ran, so there is nothing to put in
 * the envelope, and an HTTP error makes a mistyped path loud.
 */
export async function startPublicServer<Services>(options: PublicServerOptions<Services>): Promise<RunningServer> {
  const { logger } = options;
  const lookUp = routeTable(options.routes, options.rawRoutes ?? [], options.fetchRoutes ?? []);

  const runOperation = async (
    req: IncomingMessage,
    res: ServerResponse,
    url: URL,
    route: Route,
    span: Span | undefined,
  ): Promise<void> => {
    const started = performance.now();
    // The client went away before the answer. A finished response closes too; aborting then would only
    // make an AbortError on every request.
    const gone = new AbortController();
    res.once("close", () => {
      if (!res.writableFinished) gone.abort();
    });
    const ctx: RequestContext = {
      route,
      request: req,
      url,
      headers: req.headers,
      remoteAddress: req.socket.remoteAddress,
      rawInput: {},
      input: undefined,
      credential: undefined,
      extras: {},
      responseHeaders: {},
      services: options.services,
      clock: options.clock,
      logger,
      signal: gone.signal,
    };
    const outcome = await runPipeline(options.stages, ctx);
    if (outcome.kind === "stream") {
      logger.info("event stream", { operation: route.operationId, credential_id: ctx.credential?.caller.credentialId });
      eventStreams.inc();
      try {
        await writeEventStream(res, outcome.stream, gone.signal, {
          ...baselineHeaders,
          ...ctx.responseHeaders,
          ...corsResponseHeaders(ctx.credential, req.headers),
        });
      } finally {
        eventStreams.dec();
      }
      return logger.info("event stream ended", {
        operation: route.operationId,
        duration_ms: Math.round(performance.now() - started),
      });
    }
    const reply = envelope(outcome, route.envelope, ctx.extras);
    const log = {
      operation: route.operationId,
      status: reply.status,
      ...(outcome.kind === "error" ? { error_status: outcome.error.statusCode } : {}),
      credential_id: ctx.credential?.caller.credentialId,
      duration_ms: Math.round(performance.now() - started),
    };
    if (outcome.kind === "unhandled") logger.error("unhandled failure", { ...log, error: outcome.error });
    else if (outcome.kind === "error" && outcome.cause !== undefined)
      logger.warn("a service behind the gateway failed", { ...log, error: outcome.cause });
    else logger.info("request", log);
    span?.setAttribute("http.response.status_code", reply.status);
    // The answer's own status where the envelope carries an error inside an HTTP 200.
    const status =
      outcome.kind === "error" ? outcome.error.statusCode : outcome.kind === "unhandled" ? 500 : reply.status;
    operationRequests.inc({ operation: route.operationId, status });
    operationDurations.observe({ operation: route.operationId }, (performance.now() - started) / 1000);
    send(res, reply.status, reply.body, {
      ...ctx.responseHeaders,
      ...corsResponseHeaders(ctx.credential, req.headers),
    });
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const method = req.method ?? "GET";
    const url = URL.parse(req.url ?? "/", "http://gateway.invalid");
    if (!url) return send(res, 400, badRequest("the request target is not a valid URL"));
    const path = url.pathname;

    if (path === "/healthz") return send(res, 200, { status: "ok", service: "gateway" });
    if (path === "/readyz" && url.searchParams.get("mesh") === "1" && options.meshHealth) {
      // The whole mesh, for an operator or `npm start`: which services are down. Plain /readyz stays the
      // kubelet's probe of this replica alone, which must not fail because another service restarts.
      const [own, services] = await Promise.all([
        options.ready().then(
          () => undefined,
          (error: Error) => error.message,
        ),
        options.meshHealth(),
      ]);
      const down = Object.keys(services).filter((name) => services[name] === "down");
      if (own === undefined && down.length === 0)
        return send(res, 200, { status: "ready", service: "gateway", services });
      return send(res, 503, {
        status: "unavailable",
        service: "gateway",
        down,
        services,
        ...(own === undefined ? {} : { error: own }),
      });
    }
    if (path === "/readyz") {
      try {
        await options.ready();
        return send(res, 200, { status: "ready", service: "gateway" });
      } catch (error) {
        return send(res, 503, { status: "unavailable", service: "gateway", error: (error as Error).message });
      }
    }
    const methods = lookUp(path);
    if (!methods)
      return send(res, 404, {
        error: "not_found",
        message: path.startsWith(`${basePath}/`) ? `no such operation: ${method} ${path}` : `no such path: ${path}`,
      });
    const target = methods.get(method);
    if (target?.kind === "operation") {
      const route = target.route;
      return inHttpServerSpan(method, `${basePath}${route.path}`, (span) => runOperation(req, res, url, route, span));
    }
    if (target?.kind === "fetch") {
      const route = target.route;
      return inHttpServerSpan(method, route.path, () => serveFetch(req, res, url, route));
    }
    if (target?.kind === "raw") {
      const limit = target.route.bodyLimit ?? rawBodyLimit;
      const body = method === "POST" ? await readRawBody(req, limit) : "";
      if (body === undefined) return send(res, 413, badRequest(`the body is larger than ${limit} bytes`));
      return sendRaw(res, await target.route.serve({ url, headers: req.headers, body }));
    }
    // A preflight runs no stage: it carries no credential, is not counted and calls no service.
    const browserMethods = [...methods.values()].flatMap((t) =>
      t.kind === "operation" && servesBrowsers(t.route) ? [t.route.method] : [],
    );
    if (method === "OPTIONS" && browserMethods.length > 0)
      return void res.writeHead(204, { ...baselineHeaders, ...preflightHeaders(browserMethods, req.headers) }).end();
    const allowed = [...methods.keys(), ...(browserMethods.length > 0 ? ["OPTIONS"] : [])].join(", ");
    send(
      res,
      405,
      { error: "method_not_allowed", message: `${path} takes ${allowed}, not ${method}` },
      { allow: allowed },
    );
  };

  // Node would answer a request without Host on its own, with an empty 400: `handle` answers it in our shape.
  const server = createServer({ requireHostHeader: false }, (req, res) => {
    if (req.httpVersion === "1.1" && req.headers.host === undefined)
      return send(res, 400, badRequest("an HTTP/1.1 request must carry a Host header"), { connection: "close" });
    handle(req, res).catch((error: unknown) => {
      // Without the query: a QR code's address holds the flow secret there.
      logger.error("request failed outside the pipeline", { error, path: req.url?.split("?")[0] });
      if (!res.headersSent) send(res, 500, unhandledBody);
      else res.destroy();
    });
  });
  // An Expect other than 100-continue, which Node would refuse with an empty 417.
  server.on("checkExpectation", (req, res) =>
    send(
      res,
      417,
      badRequest(`the expectation ${JSON.stringify(req.headers.expect)} is not supported; only 100-continue is`),
      {
        connection: "close",
      },
    ),
  );
  // What Node's parser refuses (oversized or malformed headers, a malformed request line, control characters)
  // gets our shape and its own status rather than Node's bare one; the connection cannot be trusted after it,
  // so it closes.
  server.on("clientError", (error: NodeJS.ErrnoException, socket) => {
    if (!socket.writable) return socket.destroy();
    const [status, reason, message] =
      error.code === "HPE_HEADER_OVERFLOW"
        ? [431, "Request Header Fields Too Large", "request headers are too large"]
        : error.code === "ERR_HTTP_REQUEST_TIMEOUT"
          ? [408, "Request Timeout", "the request did not arrive in time"]
          : [400, "Bad Request", "the request is not valid HTTP/1.1"];
    const text = JSON.stringify(badRequest(message));
    const headers = Object.entries({
      ...baselineHeaders,
      "content-type": "application/json; charset=utf-8",
      "content-length": Buffer.byteLength(text),
      connection: "close",
    });
    socket.end(
      `HTTP/1.1 ${status} ${reason}\r\n${headers.map(([name, value]) => `${name}: ${value}\r\n`).join("")}\r\n${text}`,
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  logger.info("public API listening", { host: options.host, port });

  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeIdleConnections();
      // Requests under way get a moment to finish; then their connections go too.
      setTimeout(() => server.closeAllConnections(), 5000).unref();
    }));
  return { port, url: `http://${options.host}:${port}`, stop };
}
