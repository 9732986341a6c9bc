import { type AgentOperations, type Answer, type Refusal, rateLimitRefusal } from "@svc/mcp-tools";
import { Verifier } from "@svc/sdk";

/** Where the public API is and who the agent is, from the environment `svcctl mcp --stdio` was started with. */
export interface AgentApi {
  /** `{base_url}`, for example `https://api.example.com/v1`. */
  baseUrl: string;
  /** `{api_origin}` as the service signs it: the `iss` of its proofs. */
  issuer: string;
  agentKey: string;
}

/**
 * The agent operations over HTTP: each a request to the public JSON route with the agent's key, its answer read
 * from the envelope. A refusal the route answers outside the envelope (a 400, the rate limiter's 403) is read as
 * the same refusal the gateway's own MCP server gives; a service out of reach is a 502 to retry.
 */
export function httpOperations(api: AgentApi): AgentOperations {
  const call = async (
    method: "GET" | "POST",
    path: string,
    input: Record<string, unknown>,
    signal?: AbortSignal,
  ): Promise<Answer> => {
    const url = new URL(`${api.baseUrl}${path}`);
    if (method === "GET")
      for (const [name, value] of Object.entries(input))
        if (value !== undefined) url.searchParams.set(name, String(value));
    let response: Response;
    try {
      response = await fetch(url, {
        method,
        headers: {
          authorization: `Bearer ${api.agentKey}`,
          ...(method === "POST" && { "content-type": "application/json" }),
        },
        ...(method === "POST" && { body: JSON.stringify(input) }),
        ...(signal && { signal }),
      });
    } catch (error) {
      return {
        ok: false,
        error: { statusCode: 502, message: `cannot reach ${api.baseUrl}: ${(error as Error).message}` },
      };
    }
    const body = (await response.json().catch(() => undefined)) as Record<string, unknown> | undefined;
    const data = body?.data as { data?: Record<string, unknown>; error?: Refusal } | undefined;
    if (response.status === 200 && data?.error) return { ok: false, error: data.error };
    if (response.status === 200 && data?.data) return { ok: true, data: data.data };
    if (response.status === 400 && body?.code === "InputValidationError")
      return { ok: false, error: { ...body, statusCode: 400, message: String(body.message) } };
    if (response.status === 403 && Array.isArray(body?.errors)) return { ok: false, error: rateLimitRefusal(body) };
    return { ok: false, error: { statusCode: 502, message: `${api.baseUrl} answered HTTP ${response.status}; retry` } };
  };
  return {
    bindSession: (input) => call("POST", "/agent/bind-session", input),
    checkBinding: (input) => call("GET", "/agent/check-binding", input),
    inquire: (input) => call("POST", "/agentlink/inquire", input),
    checkStatus: (input, signal) => call("GET", "/agentlink/check-status", input, signal),
    cancel: (input) => call("POST", "/agentlink/cancel", input),
    verifier: new Verifier({ issuer: api.issuer, jwksUrl: `${new URL(api.baseUrl).origin}/.well-known/jwks.json` }),
  };
}
