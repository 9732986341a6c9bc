import {
  type AuthInfo,
  isInitializeRequest,
  isJsonContentType,
  type JSONRPCMessage,
  type JSONRPCResponse,
  parseJSONRPCMessage,
  type RequestId,
  SUPPORTED_PROTOCOL_VERSIONS,
  type Transport,
} from "@modelcontextprotocol/server";

/** The SDK's own limit on a batch. */
const maxBatchSize = 100;

/**
 * The SDK's Streamable HTTP transport reduced to what a stateless 2025-era POST answered as one JSON body needs:
 * the same checks and refusals (status, JSON-RPC error, `application/json`), the messages handed to the connected
 * server, its answers collected by request id into one body. It skips what that transport spends on sessions,
 * streams and re-validating each message's shape at every step; no gain was measurable yet (the MCP bench's
 * rounds swing 2x), see gateway/README.md.
 */
export class JsonAnswerTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: Transport["onmessage"];
  private supportedVersions: readonly string[] = SUPPORTED_PROTOCOL_VERSIONS;
  private pending = new Map<RequestId, JSONRPCResponse | undefined>();
  private settle: ((response: Response) => void) | undefined;
  private closed = false;

  async start(): Promise<void> {}

  setSupportedProtocolVersions(versions: string[]): void {
    this.supportedVersions = versions;
  }

  async send(message: JSONRPCMessage): Promise<void> {
    const id = "method" in message ? undefined : message.id;
    if (id === undefined || !this.pending.has(id)) return;
    this.pending.set(id, message as JSONRPCResponse);
    const answers = [...this.pending.values()];
    if (answers.some((answer) => answer === undefined)) return;
    this.settle?.(Response.json(answers.length === 1 ? answers[0] : answers, { status: 200 }));
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.settle?.(refusal(404, -32001, "Session not found"));
    this.onclose?.();
  }

  /** One POST's answer: a refusal as the SDK's transport words it, 202 for notifications alone, or the answers. */
  answer(headers: Headers, body: unknown, authInfo: AuthInfo): Promise<Response> {
    const refuse = (status: number, code: number, message: string) => {
      this.onerror?.(new Error(message));
      return Promise.resolve(refusal(status, code, message));
    };
    const accept = headers.get("accept");
    if (!accept?.includes("application/json") || !accept.includes("text/event-stream"))
      return refuse(406, -32000, "Not Acceptable: Client must accept both application/json and text/event-stream");
    if (!isJsonContentType(headers.get("content-type")))
      return refuse(415, -32000, "Unsupported Media Type: Content-Type must be application/json");
    const raw = Array.isArray(body) ? body : [body];
    if (raw.length > maxBatchSize)
      return refuse(400, -32600, `Invalid Request: Batch must not exceed ${maxBatchSize} messages`);
    let messages: JSONRPCMessage[];
    try {
      messages = raw.map((message) => parseJSONRPCMessage(message));
    } catch {
      return refuse(400, -32700, "Parse error: Invalid JSON-RPC message");
    }
    if (messages.some((message) => isInitializeRequest(message))) {
      if (messages.length > 1)
        return refuse(400, -32600, "Invalid Request: Only one initialization request is allowed");
    } else {
      const version = headers.get("mcp-protocol-version");
      if (version !== null && !this.supportedVersions.includes(version))
        return refuse(
          400,
          -32000,
          `Bad Request: Unsupported protocol version: ${version} (supported versions: ${this.supportedVersions.join(", ")})`,
        );
    }
    for (const message of messages) if ("method" in message && "id" in message) this.pending.set(message.id, undefined);
    const answered =
      this.pending.size === 0
        ? Promise.resolve(new Response(null, { status: 202 }))
        : new Promise<Response>((resolve) => {
            this.settle = resolve;
          });
    for (const message of messages) this.onmessage?.(message, { authInfo });
    return answered;
  }
}

const refusal = (status: number, code: number, message: string) =>
  Response.json({ jsonrpc: "2.0", error: { code, message }, id: null }, { status });
