import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { Webhook } from "standardwebhooks";

/**
 * The spec's deduplication key of an event ("Events", "Deduplication keys"): what a partner must see once.
 * Resolutions are keyed by `resolution_id`; account events have none but their `webhook-id`.
 */
function dedupKeyOf(body: Record<string, unknown>, webhookId: string): string {
  const type = String(body.type);
  if (type.startsWith("gate.")) return `${type}:${body.request_id}`;
  if (type === "agents_ask.resolution.confirmed" || type === "agents_ask.resolution.denied")
    return `resolution:${body.resolution_id}`;
  if (type === "agents_ask.card.proposed" || type === "agents_ask.resolution.expired") return `${type}:${body.card_id}`;
  return `webhook-id:${webhookId}`;
}

export interface WebhookReceiver {
  url: string;
  /** The endpoint's signing secret, once webhook-dispatch issued it. */
  setSecret(secret: string): void;
  /** The distinct `webhook-id`s that carried this deduplication key. */
  webhookIds(dedupKey: string): ReadonlySet<string>;
  /** The deduplication keys of the resolution events (confirmed or denied) of one agent request. */
  resolutionKeys(agentRequestId: string): ReadonlySet<string>;
  /** Every deduplication key seen so far. */
  dedupKeys(): IterableIterator<string>;
  /** How often each webhook-id arrived (a redelivery of one message counts again). */
  arrivals(webhookId: string): number;
  /** Deliveries whose signature did not verify (answered 400, as the spec tells a partner to). */
  badSignatures(): number;
  close(): void;
}

/**
 * A partner's webhook endpoint on 127.0.0.1 that verifies each delivery's signature (standardwebhooks) and
 * counts arrivals per `webhook-id` and the distinct webhook-ids per deduplication key: a redelivery of one
 * message is allowed, two messages for one event are a duplicate.
 */
export async function startWebhookReceiver(): Promise<WebhookReceiver> {
  let verifier: Webhook | undefined;
  const idsByKey = new Map<string, Set<string>>();
  const arrivals = new Map<string, number>();
  const resolutions = new Map<string, Set<string>>();
  let bad = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const raw = Buffer.concat(chunks).toString();
      let body: Record<string, unknown>;
      try {
        if (!verifier) throw new Error("no secret yet");
        body = verifier.verify(raw, req.headers as Record<string, string>) as Record<string, unknown>;
      } catch {
        bad++;
        res.writeHead(400).end();
        return;
      }
      const webhookId = String(req.headers["webhook-id"]);
      const key = dedupKeyOf(body, webhookId);
      idsByKey.set(key, (idsByKey.get(key) ?? new Set()).add(webhookId));
      arrivals.set(webhookId, (arrivals.get(webhookId) ?? 0) + 1);
      if (key.startsWith("resolution:")) {
        const requestId = String(body.request_id);
        resolutions.set(requestId, (resolutions.get(requestId) ?? new Set()).add(key));
      }
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`,
    setSecret: (secret) => {
      verifier = new Webhook(secret);
    },
    webhookIds: (key) => idsByKey.get(key) ?? new Set(),
    resolutionKeys: (requestId) => resolutions.get(requestId) ?? new Set(),
    dedupKeys: () => idsByKey.keys(),
    arrivals: (webhookId) => arrivals.get(webhookId) ?? 0,
    badSignatures: () => bad,
    close: () => server.close(),
  };
}
