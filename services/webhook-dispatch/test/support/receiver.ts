import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import { Webhook } from "standardwebhooks";
import { vi } from "vitest";

export interface ReceivedRequest {
  headers: IncomingHttpHeaders;
  body: Buffer;
  json: Record<string, unknown>;
  webhookId: string;
  timestamp: number;
}

type Answer = { status: number; headers?: Record<string, string> };
/** Decides the answer to a request; may wait (a slow endpoint) before it answers. */
export type Responder = (request: ReceivedRequest) => Answer | Promise<Answer>;

export interface Receiver {
  url: string;
  port: number;
  requests: ReceivedRequest[];
  respond: Responder;
  /** The most requests it was ever answering at the same time. */
  maxConcurrent: number;
  close(): Promise<void>;
}

/** A partner's endpoint on 127.0.0.1 that records every POST and answers 204 unless told otherwise. */
export async function startReceiver(respond: Responder = () => ({ status: 204 })): Promise<Receiver> {
  let concurrent = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", async () => {
      const body = Buffer.concat(chunks);
      const request: ReceivedRequest = {
        headers: req.headers,
        body,
        json: body.length > 0 ? JSON.parse(body.toString()) : {},
        webhookId: String(req.headers["webhook-id"]),
        timestamp: Number(req.headers["webhook-timestamp"]),
      };
      receiver.requests.push(request);
      concurrent += 1;
      receiver.maxConcurrent = Math.max(receiver.maxConcurrent, concurrent);
      try {
        const answer = await receiver.respond(request);
        res.writeHead(answer.status, answer.headers).end();
      } finally {
        concurrent -= 1;
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  const receiver: Receiver = {
    url: `http://127.0.0.1:${port}/webhooks`,
    port,
    requests: [],
    respond,
    maxConcurrent: 0,
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
  return receiver;
}

/**
 * Verifies a delivery exactly as a partner would, with the standardwebhooks package, as of `now`
 * (its timestamp tolerance reads Date.now, which a test on a manual clock pins to that clock).
 */
export function verifyDelivery(secret: string, request: Pick<ReceivedRequest, "headers" | "body">, now: Date): unknown {
  const spy = vi.spyOn(Date, "now").mockReturnValue(now.getTime());
  try {
    return new Webhook(secret).verify(request.body, request.headers as Record<string, string>);
  } finally {
    spy.mockRestore();
  }
}
