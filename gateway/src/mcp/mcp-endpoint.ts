import type { IncomingMessage } from "node:http";
import { createMcpHandler } from "@modelcontextprotocol/server";
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
  const handler = createMcpHandler(
    ({ authInfo }) => agentToolServer(inProcessOperations(setting, authInfo?.extra?.request as RequestState)),
    {
      maxRequestBodySize: bodyLimitBytes,
      onerror: (error) => logger_.info("MCP request refused", { error: error.message }),
    },
  );

  const refusal = (status: number, body: Record<string, string>, headers: Record<string, string> = {}) =>
    Response.json(body, { status, headers: { ...headers, "cache-control": "no-store" } });

  return {
    path: mcpPath,
    methods: ["GET", "POST", "DELETE"],
    async fetch(request, incoming) {
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
      return handler.fetch(request, {
        authInfo: { token: "", clientId: ctx.credential.caller.credentialId, scopes: [], extra: { request: state } },
      });
    },
  };
}
