import type { IncomingHttpHeaders } from "node:http";

/**
 * A reply outside the envelope, for what is not an operation: the key set, the OpenAPI document, a QR
 * code image, the web pages. No stage runs for it (no credential, no rate limit, no rename window); it answers from its address (and, for
 * a form post, its body) alone.
 */
export interface RawReply {
  status: number;
  /** Every header but `content-length`, which the server adds: `content-type` included. */
  headers: Record<string, string>;
  body: string | Buffer;
}

/**
 * One raw reply in the public server's route table, beside the operations. To add one (a script, a
 * page), write it as a `RawRoute` next to what it serves and list it in `rawRoutes` (`operations/index.ts`).
 */
export interface RawRoute {
  /** Where it answers on the public origin: a path, or a pattern for a family of addresses. */
  path: `/${string}` | RegExp;
  /**
   * A GET route answers HEAD too (the same headers, no body). POST is for form posts
   * (`application/x-www-form-urlencoded`, at most `bodyLimit` bytes): the body arrives as text.
   */
  method: "GET" | "POST";
  /** The largest POST body it reads (`rawBodyLimit` unless set); a larger one is answered 413 unread. */
  bodyLimit?: number;
  serve(request: { url: URL; headers: IncomingHttpHeaders; body: string }): RawReply | Promise<RawReply>;
}

/** The largest body a raw POST route reads unless it sets its own `bodyLimit`. */
export const rawBodyLimit = 16 * 1024;

/** `value` as a JSON reply. */
export function jsonReply(status: number, value: unknown, headers: Record<string, string> = {}): RawReply {
  return {
    status,
    headers: { ...headers, "content-type": "application/json; charset=utf-8" },
    body: JSON.stringify(value),
  };
}
