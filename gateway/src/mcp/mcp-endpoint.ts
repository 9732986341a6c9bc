import type { IncomingMessage } from "node:http";
import {
  type AuthInfo,
  createMcpHandler,
  isLegacyRequest,
  PROTOCOL_VERSION_META_KEY,
  type Server,
  WebStandardStreamableHTTPServerTransport,
} from "@modelcontextprotocol/server";
import { agentToolServer } from "@svc/mcp-tools";
import type { Clock, Logger } from "@svc/platform";
import { type AuthenticatedCredential, bearerCredential } from "../http/credential.ts";
import type { FetchRoute } from "../http/fetch-route.ts";
import { type RequestContext, runPipeline, type Stage } from "../http/pipeline.ts";
import type { Route } from "../http/route.ts";
import type { GatewayServices } from "../services.ts";
import { type InProcessSetting, inProcessOperations } from "./in-process-operations.ts";
import { protectedResourcePath } from "./protected-resource.ts";

const mcpPath = "/mcp";

/** A JSON-RPC message is small; the public API's own body limit. */
const bodyLimitBytes = 64 * 1024;

/**
 * The MCP endpoint as the authenticate stage sees it: it takes an agent key, as the agent routes do, and the
 * refusal is logged with its cause under this name. It is never handled as an operation.
 */
const mcpExchange: Route = {
  operationId: "mcp",
  method: "POST",
  path: mcpPath,
  summary: "The MCP server (Streamable HTTP)",
  auth: { accepts: ["agent_key"] },
  input: { type: "object", properties: {} },
  envelope: "nested",
  handle: () => Promise.reject(new Error("the MCP endpoint is not an operation")),
};

const authenticated: Stage = {
  name: "authenticated",
  run: async () => ({ kind: "ok", data: undefined }),
};

type RequestState = { incoming: IncomingMessage; url: URL; credential: AuthenticatedCredential };

/**
 * `{api_origin}/mcp`: MCP over Streamable HTTP, stateless (a server instance per HTTP request, no session), so
 * any replica serves any request of a client. Each request is authenticated by the gateway's authenticate stage
 * with the agent routes' rules; a refused key is HTTP 401 with the `WWW-Authenticate` challenge naming the
 * protected-resource metadata (MCP's authorization rules). Each tool call then runs its agent operation in
 * this process through the rate limit and the route's own validation and handler.
 */
export function mcpRoute(options: {
  authenticate: Stage;
  perCall: readonly Stage[];
  services: GatewayServices;
  clock: Clock;
  logger: Logger;
  verifier: InProcessSetting["verifier"];
}): FetchRoute {
  const { services, clock, logger } = options;
  const logger_ = logger.child({ component: "mcp" });
  const setting: InProcessSetting = {
    stages: options.perCall,
    services,
    clock,
    logger: logger_,
    verifier: options.verifier,
  };
  const challenge = `Bearer resource_metadata="${services.publicOrigin}${protectedResourcePath}"`;
  const serverFor = (authInfo: AuthInfo | undefined) =>
    agentToolServer(inProcessOperations(setting, authInfo?.extra?.request as RequestState));
  const handler = createMcpHandler(({ authInfo }) => serverFor(authInfo), {
    maxRequestBodySize: bodyLimitBytes,
    onerror: (error) => logger_.info("MCP request refused", { error: error.message }),
  });

  const refusal = (status: number, body: Record<string, string>, headers: Record<string, string> = {}) =>
    Response.json(body, { status, headers: { ...headers, "cache-control": "no-store" } });

  return {
    path: mcpPath,
    methods: ["GET", "POST", "DELETE"],
    bodyLimit: bodyLimitBytes,
    async fetch(request, incoming, body) {
      const ctx: RequestContext = {
        route: mcpExchange,
        request: incoming,
        url: new URL(request.url),
        headers: incoming.headers,
        remoteAddress: incoming.socket.remoteAddress,
        rawInput: {},
        input: undefined,
        credential: undefined,
        extras: {},
        responseHeaders: {},
        services,
        clock,
        logger: logger_,
        signal: request.signal,
      };
      const outcome = await runPipeline([options.authenticate, authenticated], ctx);
      if (outcome.kind === "error" && outcome.error.statusCode === 401) {
        const presented = bearerCredential(incoming.headers.authorization) !== undefined;
        return refusal(
          401,
          { error: "invalid_token", error_description: outcome.error.message },
          { "www-authenticate": presented ? `${challenge}, error="invalid_token"` : challenge },
        );
      }
      if (!ctx.credential) {
        logger_.warn("the agent key could not be checked", { outcome: outcome.kind });
        return refusal(
          503,
          { error: "temporarily_unavailable", error_description: "retry shortly" },
          { "retry-after": "1" },
        );
      }
      const state: RequestState = { incoming, url: ctx.url, credential: ctx.credential };
      const authInfo: AuthInfo = {
        token: "",
        clientId: ctx.credential.caller.credentialId,
        scopes: [],
        extra: { request: state },
      };
      const read = await readJsonBody(request, body);
      if (read.kind === "unread") return handler.fetch(withBody(request, body), { authInfo });
      if (read.kind === "legacy-without-progress")
        return answerAsJson(serverFor(authInfo), request, read.body, authInfo);
      return handler.fetch(request, { authInfo, parsedBody: read.body });
    },
  };
}

/** A body the endpoint did not parse, for the SDK's own refusals (not JSON, too large), which read it. */
const withBody = (request: Request, body: Buffer | undefined) =>
  body === undefined ? request : new Request(request, { body: new Uint8Array(body) });

type ReadBody = { kind: "unread" } | { kind: "parsed" | "legacy-without-progress"; body: unknown };

/**
 * The JSON-RPC body of a POST, parsed once: the SDK's handler then classifies it without reading it again. A body
 * that is not JSON, too large, or not a POST's goes to the handler unparsed, for its own refusals. A 2025-era
 * request that asked for no progress is marked, since it can be answered as one JSON body. One that carries the
 * 2026-07-28 envelope's revision claim is not classified here: the handler serves it as such (or refuses it) and
 * classifies it itself.
 */
async function readJsonBody(request: Request, bytes: Buffer | undefined): Promise<ReadBody> {
  if (request.method !== "POST" || bytes === undefined || bytes.length > bodyLimitBytes) return { kind: "unread" };
  let body: unknown;
  try {
    body = JSON.parse(bytes.toString("utf8"));
  } catch {
    return { kind: "unread" };
  }
  const legacy =
    !claimsModernRevision(body) && (await isLegacyRequest(request, body, { maxRequestBodySize: bodyLimitBytes }));
  return { kind: legacy && !asksForProgress(body) ? "legacy-without-progress" : "parsed", body };
}

/**
 * A message (not `initialize`, not a batch) whose `_meta` carries the per-request envelope's revision claim: the
 * SDK never answers it as a 2025-era request.
 */
const claimsModernRevision = (body: unknown): boolean => {
  const message = body as { method?: unknown; params?: { _meta?: Record<string, unknown> } } | null;
  return (
    typeof message?.method === "string" &&
    message.method !== "initialize" &&
    message.params?._meta?.[PROTOCOL_VERSION_META_KEY] !== undefined
  );
};

const asksForProgress = (body: unknown): boolean =>
  (Array.isArray(body) ? body : [body]).some(
    (message) =>
      (message as { params?: { _meta?: { progressToken?: unknown } } } | null)?.params?._meta?.progressToken !==
      undefined,
  );

/**
 * A 2025-era request (stateless, no session) answered as one JSON body rather than the SDK fallback's event
 * stream: Streamable HTTP lets a server answer a POST either way, and without a progress token nothing would
 * go on the stream before the result. The SDK's own transport answers it (`enableJsonResponse`), with its checks
 * and refusals. A client that leaves closes the exchange.
 */
async function answerAsJson(server: Server, request: Request, body: unknown, authInfo: AuthInfo): Promise<Response> {
  const transport = new WebStandardStreamableHTTPServerTransport({
    sessionIdGenerator: undefined,
    enableJsonResponse: true,
    maxRequestBodySize: bodyLimitBytes,
  });
  await server.connect(transport);
  const close = () => {
    transport.close().catch(() => {});
    server.close().catch(() => {});
  };
  request.signal.addEventListener("abort", close, { once: true });
  try {
    return await transport.handleRequest(request, { authInfo, parsedBody: body });
  } finally {
    request.signal.removeEventListener("abort", close);
    close();
  }
}
