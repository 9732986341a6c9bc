import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Clock, Logger } from "@svc/platform";
import { qrCodePrefix } from "../operations/gate-links.ts";
import { jwksPath, serveKeySet } from "../operations/jwks.ts";
import { qrCodeImage } from "../operations/qr-code.ts";
import type { GatewayServices } from "../services.ts";
import { corsResponseHeaders, preflightHeaders, servesBrowsers } from "./cors.ts";
import { envelope } from "./envelope.ts";
import { InputValidationError, unhandledBody } from "./errors.ts";
import { type RequestContext, runPipeline, type Stage } from "./pipeline.ts";
import { basePath, type Route } from "./route.ts";

export { basePath };

export interface PublicServerOptions {
  host: string;
  port: number;
  routes: readonly Route[];
  /** The pipeline every operation runs through, outermost first (see `pipeline.ts`). */
  stages: readonly Stage[];
  services: GatewayServices;
  clock: Clock;
  logger: Logger;
  /** Throws when a dependency is unreachable; `/readyz` answers 503 then. */
  ready: () => Promise<void>;
  /** The OpenAPI document, served as it is at `{base_url}/openapi.json`. */
  openApi?: unknown;
  /** Pages outside `{base_url}` (the web flow, the development identity provider's key set); true when it answered. */
  pages?: (req: IncomingMessage, res: ServerResponse, url: URL) => boolean;
}

export interface RunningServer {
  port: number;
  url: string;
  stop(): Promise<void>;
}

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    ...headers,
    "content-type": "application/json; charset=utf-8",
    "content-length": Buffer.byteLength(text),
  });
  res.end(text);
}

const badRequest = (message: string) =>
  new InputValidationError({}, [{ propertyPath: "", invalidValue: null, message }]).toBody();

/** Routes by path, then method, so a known path with the wrong method can say which it takes. */
function indexRoutes(routes: readonly Route[]): Map<string, Map<string, Route>> {
  const byPath = new Map<string, Map<string, Route>>();
  for (const route of routes) {
    const methods = byPath.get(route.path) ?? new Map<string, Route>();
    if (methods.has(route.method)) throw new Error(`two routes for ${route.method} ${route.path}`);
    methods.set(route.method, route);
    byPath.set(route.path, methods);
  }
  return byPath;
}

/**
 * The public HTTP/1.1 server: probes, the key set, and the operations under `/v1`. A path that names
 * no operation is a plain HTTP 404 (405 for a known path with another method): no operation ran, so
 * there is nothing to put in the envelope, and an HTTP error makes a mistyped path loud.
 */
export async function startPublicServer(options: PublicServerOptions): Promise<RunningServer> {
  const { logger } = options;
  const routes = indexRoutes(options.routes);

  const runOperation = async (req: IncomingMessage, res: ServerResponse, url: URL, route: Route): Promise<void> => {
    const started = performance.now();
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
    };
    const outcome = await runPipeline(options.stages, ctx);
    const reply = envelope(outcome, route.envelope, ctx.extras);
    const log = {
      operation: route.operationId,
      status: reply.status,
      ...(outcome.kind === "error" ? { error_status: outcome.error.statusCode } : {}),
      credential_id: ctx.credential?.caller.credentialId,
      duration_ms: Math.round(performance.now() - started),
    };
    if (outcome.kind === "unhandled") logger.error("unhandled failure", { ...log, error: outcome.error });
    else logger.info("request", log);
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
    if (path === "/readyz") {
      try {
        await options.ready();
        return send(res, 200, { status: "ready", service: "gateway" });
      } catch (error) {
        return send(res, 503, { status: "unavailable", service: "gateway", error: (error as Error).message });
      }
    }
    if (path === jwksPath) {
      if (method !== "GET" && method !== "HEAD")
        return send(
          res,
          405,
          { error: "method_not_allowed", message: `${jwksPath} takes GET` },
          { allow: "GET, HEAD" },
        );
      const reply = await serveKeySet(options.services.keySet);
      return send(res, reply.status, reply.body, reply.headers);
    }
    if (options.openApi !== undefined && path === `${basePath}/openapi.json`) {
      if (method !== "GET" && method !== "HEAD")
        return send(res, 405, { error: "method_not_allowed", message: `${path} takes GET` }, { allow: "GET, HEAD" });
      return send(res, 200, options.openApi);
    }
    if (path.startsWith(`${basePath}${qrCodePrefix}`)) {
      if (method !== "GET" && method !== "HEAD")
        return send(res, 405, { error: "method_not_allowed", message: `${path} takes GET` }, { allow: "GET, HEAD" });
      const image = qrCodeImage(path.slice(basePath.length), url.searchParams);
      if (!image)
        return send(res, 404, {
          error: "not_found",
          message: "no such QR code: the address is not one this service issued",
        });
      return void res
        .writeHead(200, { ...image.headers, "content-length": Buffer.byteLength(image.body) })
        .end(image.body);
    }
    if (path.startsWith(`${basePath}/`)) {
      const methods = routes.get(path.slice(basePath.length));
      const route = methods?.get(method);
      if (route) return runOperation(req, res, url, route);
      if (methods) {
        // A preflight runs no stage: it carries no credential, is not counted and calls no service.
        const browserMethods = [...methods.values()].filter(servesBrowsers).map((r) => r.method);
        if (method === "OPTIONS" && browserMethods.length > 0)
          return void res.writeHead(204, preflightHeaders(browserMethods, req.headers)).end();
        const allowed = [...methods.keys(), ...(browserMethods.length > 0 ? ["OPTIONS"] : [])].join(", ");
        return send(
          res,
          405,
          { error: "method_not_allowed", message: `${path} takes ${allowed}, not ${method}` },
          { allow: allowed },
        );
      }
      return send(res, 404, { error: "not_found", message: `no such operation: ${method} ${path}` });
    }
    if (options.pages?.(req, res, url)) return;
    send(res, 404, { error: "not_found", message: `no such path: ${path}` });
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      // Without the query: a QR code's address holds the flow secret there.
      logger.error("request failed outside the pipeline", { error, path: req.url?.split("?")[0] });
      if (!res.headersSent) send(res, 500, unhandledBody);
      else res.destroy();
    });
  });
  // What Node's parser refuses (oversized or malformed headers, control characters) is a 400 in our
  // shape rather than Node's bare 400/431; the connection cannot be trusted after it, so it closes.
  server.on("clientError", (error: NodeJS.ErrnoException, socket) => {
    if (!socket.writable) return socket.destroy();
    const text = JSON.stringify(
      badRequest(
        error.code === "HPE_HEADER_OVERFLOW" ? "request headers are too large" : "the request is not valid HTTP/1.1",
      ),
    );
    socket.end(
      `HTTP/1.1 400 Bad Request\r\ncontent-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(text)}\r\nconnection: close\r\n\r\n${text}`,
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
