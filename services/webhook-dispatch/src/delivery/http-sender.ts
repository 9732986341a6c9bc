import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";
import { type DestinationPolicy, guardedLookup, hostOf, refusalForUrl } from "./destination-guard.ts";

interface SendRequest {
  url: string;
  headers: Record<string, string>;
  body: Buffer;
  timeoutMs: number;
}

export type SendOutcome =
  | { kind: "delivered"; statusCode: number }
  | { kind: "failed"; statusCode: number | undefined; error: string; retryAfter: string | undefined };

export interface HttpSender {
  send(request: SendRequest): Promise<SendOutcome>;
  close(): void;
}

/**
 * One POST per attempt over node:http(s) rather than fetch, for three things fetch does not give:
 * the destination guard as the socket's `lookup`, one deadline over connect and answer, and no
 * redirects (a 3xx is a failed attempt, never followed). Connections are kept alive per endpoint.
 */
export function createHttpSender(policy: DestinationPolicy): HttpSender {
  const lookup = guardedLookup(policy);
  const agents = {
    http: new HttpAgent({ keepAlive: true, lookup }),
    https: new HttpsAgent({ keepAlive: true, lookup }),
  };

  const send = (request: SendRequest): Promise<SendOutcome> =>
    new Promise((resolve) => {
      const failed = (error: string, response?: IncomingMessage) =>
        resolve({
          kind: "failed",
          statusCode: response?.statusCode,
          error,
          retryAfter: headerValue(response?.headers["retry-after"]),
        });
      let url: URL;
      try {
        url = new URL(request.url);
      } catch {
        return failed(`not a URL: ${request.url}`);
      }
      const refusal = refusalForUrl(url, policy);
      if (refusal) return failed(`destination refused: ${refusal}`);

      const secure = url.protocol === "https:";
      const req = (secure ? httpsRequest : httpRequest)({
        method: "POST",
        protocol: url.protocol,
        hostname: hostOf(url),
        port: url.port || undefined,
        path: `${url.pathname}${url.search}`,
        headers: { ...request.headers, "content-length": String(request.body.length), "user-agent": "svc-webhooks/1" },
        agent: secure ? agents.https : agents.http,
        lookup,
      });
      const deadline = setTimeout(
        () => req.destroy(new Error(`no answer within ${request.timeoutMs} ms`)),
        request.timeoutMs,
      );
      req.once("response", (response) => {
        const status = response.statusCode ?? 0;
        // Drain the body so the connection can be reused; the deadline still bounds a body that never ends.
        response.resume();
        response.once("end", () => clearTimeout(deadline));
        response.once("error", () => clearTimeout(deadline));
        if (status >= 200 && status < 300) resolve({ kind: "delivered", statusCode: status });
        else failed(`answered HTTP ${status}`, response);
      });
      req.once("error", (error: NodeJS.ErrnoException) => {
        clearTimeout(deadline);
        failed(
          error.name === "DestinationRefused"
            ? `destination refused: ${error.message}`
            : error.message || error.code || "connection failed",
        );
      });
      req.end(request.body);
    });

  return {
    send,
    close() {
      agents.http.destroy();
      agents.https.destroy();
    },
  };
}

const headerValue = (value: string | string[] | undefined): string | undefined =>
  Array.isArray(value) ? value[0] : value;
