import type { IncomingMessage } from "node:http";

/**
 * A path answered by a web-standard handler (`Request` → `Response`) rather than by an operation or a raw
 * reply: a protocol the gateway serves through its own library, which streams (the MCP server at `/mcp`).
 * No stage runs before it; the handler runs the stages it needs itself. Listed in `fetchRoutes`
 * (`server.ts`).
 */
export interface FetchRoute {
  path: `/${string}`;
  methods: readonly ("GET" | "POST" | "DELETE")[];
  /**
   * The most of a body the server reads: it stops one chunk past this, so a longer body (even one sent
   * without a length) is never held whole, and the handler sees that it is too long.
   */
  bodyLimit: number;
  /**
   * `incoming` is the Node request the `Request` was made from (its socket, its headers as Node read them);
   * `body` the bytes of its body, read already, `undefined` for a GET. The `Request` carries no body: copying
   * it there costs every request, and a handler that wants a library to read it attaches it itself.
   */
  fetch(request: Request, incoming: IncomingMessage, body: Buffer | undefined): Promise<Response>;
}
