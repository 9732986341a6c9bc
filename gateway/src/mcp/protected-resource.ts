import type { RawRoute } from "../http/raw-route.ts";
import { jsonReply } from "../http/raw-route.ts";

export const protectedResourcePath = "/.well-known/oauth-protected-resource";

/**
 * RFC 9728 metadata of the MCP server, where a 401's `WWW-Authenticate` points: the resource and how to present
 * its credential. The credential is the agent's key, issued at agent registration, so no authorization server
 * is named.
 */
function protectedResourceMetadata(publicOrigin: string) {
  return {
    resource: `${publicOrigin}/mcp`,
    resource_name: "Agents Ask (MCP)",
    bearer_methods_supported: ["header"],
    resource_documentation: `${publicOrigin}/v1/openapi.json`,
  };
}

export function protectedResourceRoute(publicOrigin: string): RawRoute {
  const reply = jsonReply(200, protectedResourceMetadata(publicOrigin), { "cache-control": "public, max-age=300" });
  return { path: protectedResourcePath, method: "GET", serve: () => reply };
}

/** The MCP endpoint and its metadata in the OpenAPI document: both outside `{base_url}` and the envelope. */
export const mcpPaths = (publicOrigin: string) => {
  const unauthorized = {
    description:
      'No agent key, or one refused for any of the agent routes\' reasons: `WWW-Authenticate: Bearer resource_metadata="{api_origin}/.well-known/oauth-protected-resource"` (with `error="invalid_token"` when a key was presented).',
    headers: { "WWW-Authenticate": { schema: { type: "string" } } },
    content: {
      "application/json": {
        schema: {
          type: "object",
          required: ["error", "error_description"],
          properties: { error: { const: "invalid_token" }, error_description: { type: "string" } },
        },
      },
    },
  };
  const protocolError = (description: string) => ({
    description: `${description}: a JSON-RPC error answer (\`id\` null), from the MCP transport.`,
    content: {
      "application/json": {
        schema: {
          type: "object",
          required: ["jsonrpc", "error"],
          properties: {
            jsonrpc: { const: "2.0" },
            error: {
              type: "object",
              required: ["code", "message"],
              properties: { code: { type: "integer" }, message: { type: "string" } },
            },
          },
        },
      },
    },
  });
  /** One JSON-RPC 2.0 message of MCP: a request (with `id`) or a notification; other methods answer -32601. */
  const jsonRpcMessage = {
    type: "object",
    required: ["jsonrpc", "method"],
    properties: {
      jsonrpc: { const: "2.0" },
      id: { type: ["string", "integer"] },
      method: {
        enum: [
          "initialize",
          "ping",
          "tools/list",
          "tools/call",
          "notifications/initialized",
          "notifications/cancelled",
        ],
      },
      params: { type: "object" },
    },
  };
  /** JSON-RPC 2.0's response object: a result under the request's id, or an error (`id` null when none was read). */
  const jsonRpcAnswer = {
    type: "object",
    required: ["jsonrpc", "id"],
    properties: { jsonrpc: { const: "2.0" }, id: { type: ["string", "integer", "null"] } },
    oneOf: [
      { required: ["result"], properties: { result: { type: "object" } } },
      {
        required: ["error"],
        properties: {
          error: {
            type: "object",
            required: ["code", "message"],
            properties: { code: { type: "integer" }, message: { type: "string" } },
          },
        },
      },
    ],
  };
  const exchange = (summary: string) => ({
    summary,
    security: [{ agentKey: [] }],
    responses: {
      "200": {
        description:
          "A JSON-RPC answer (`application/json`), or a stream of them (`text/event-stream`) when a tool call sends progress notifications before its result.",
        content: {
          "application/json": { schema: jsonRpcAnswer },
          "text/event-stream": { schema: { type: "string" } },
        },
      },
      "202": { description: "A notification or response accepted." },
      "400": protocolError("The body is not a JSON-RPC message, or not one of this protocol revision"),
      "401": unauthorized,
      "413": protocolError("The body is over 64 KiB"),
      "406": protocolError("`Accept` names neither `application/json` nor `text/event-stream`"),
      "415": protocolError("The body is not `application/json`"),
    },
  });
  /** GET and DELETE serve a 2025-era session, which a stateless server never opens (its client carries on without). */
  const noSession = (operationId: string, summary: string) => ({
    operationId,
    summary: `${summary}: the server keeps no session, so every call is a POST.`,
    security: [{ agentKey: [] }],
    responses: {
      "401": unauthorized,
      "405": {
        ...protocolError("Stateless: `Allow: POST`"),
        headers: { Allow: { schema: { const: "POST" } } },
      },
    },
  });
  return {
    "/mcp": {
      servers: [{ url: publicOrigin }],
      post: {
        operationId: "mcp",
        ...exchange(
          "The MCP server (Streamable HTTP, protocol revisions 2026-07-28 and 2025-11-25 and earlier, stateless: any replica answers any request). Tools: link_person, check_link, ask_person, check_request, cancel_request, verify_proof. A tool call counts against the agent's rate limits as one request of its JSON route; a refusal (the route's data.error, a rate limit as statusCode 429) is a tool result with isError: true and structuredContent {error}.",
        ),
        requestBody: { required: true, content: { "application/json": { schema: jsonRpcMessage } } },
      },
      get: noSession("mcpOpenStream", "A 2025-era client's standalone event stream: none is offered"),
      delete: noSession("mcpEndSession", "A 2025-era client's end of its session: there is none to end"),
    },
    [protectedResourcePath]: {
      servers: [{ url: publicOrigin }],
      get: {
        operationId: "mcpProtectedResource",
        summary:
          "OAuth protected-resource metadata (RFC 9728) of the MCP server: present the agent key as a Bearer header.",
        security: [],
        responses: {
          "200": {
            description: "`Cache-Control: public, max-age=300`.",
            content: {
              "application/json": {
                schema: {
                  type: "object",
                  required: ["resource", "bearer_methods_supported"],
                  properties: {
                    resource: { type: "string" },
                    resource_name: { type: "string" },
                    bearer_methods_supported: { type: "array", items: { const: "header" } },
                    resource_documentation: { type: "string" },
                  },
                },
              },
            },
          },
        },
      },
    },
  };
};
