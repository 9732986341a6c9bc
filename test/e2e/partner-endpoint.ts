import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { createClient } from "@connectrpc/connect";
import { WebhookConsoleService } from "@svc/proto/webhook/v1/webhook_pb.js";
import { Webhook } from "standardwebhooks";
import { vi } from "vitest";
import type { TestMesh } from "../harness/test-mesh.ts";

interface SignedDelivery {
  /** `webhook-id`: the partner's deduplication key. */
  id: string;
  body: Record<string, unknown>;
}

export interface PartnerEndpoint {
  endpointId: string;
  /** Each message once, by `webhook-id`, in the order it first arrived. */
  deliveries(): SignedDelivery[];
  /** Every arrival whose signature checked, redeliveries of one message included. */
  attempts(): number;
  /** The first delivery whose body matches, waited for up to 15 s. */
  waitFor(match: (body: Record<string, unknown>) => boolean, what?: string): Promise<SignedDelivery>;
  close(): void;
}

/**
 * A partner's webhook endpoint: a receiver on 127.0.0.1, registered with webhook-dispatch for one
 * organization. It keeps only deliveries whose `webhook-signature` standardwebhooks computes the same at
 * the `webhook-timestamp` they were signed for (tests move the mesh's clock, so `verify`'s tolerance
 * against the real clock would not apply), and deduplicates on `webhook-id` as a partner should.
 */
export async function startPartnerEndpoint(
  mesh: TestMesh,
  organizationId: string,
  types: string[] = [],
): Promise<PartnerEndpoint> {
  const byId = new Map<string, SignedDelivery>();
  let attempts = 0;
  let secret = "";
  const receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const raw = Buffer.concat(chunks).toString();
      const id = String(req.headers["webhook-id"]);
      const signedAt = new Date(Number(req.headers["webhook-timestamp"]) * 1000);
      if (
        String(req.headers["webhook-signature"])
          .split(" ")
          .includes(new Webhook(secret).sign(id, signedAt, raw))
      ) {
        attempts++;
        if (!byId.has(id)) byId.set(id, { id, body: JSON.parse(raw) });
      }
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
  const webhooks = createClient(WebhookConsoleService, mesh.consoleTransport());
  const added = await webhooks.addEndpoint({
    organizationId,
    url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`,
    types,
  });
  secret = added.secret;
  const deliveries = () => [...byId.values()];
  return {
    endpointId: added.endpoint?.endpointId ?? "",
    deliveries,
    attempts: () => attempts,
    waitFor: (match, what = "a matching webhook") =>
      vi.waitFor(
        () => {
          const found = deliveries().find((d) => match(d.body));
          if (!found) throw new Error(`no ${what} yet`);
          return found;
        },
        { timeout: 15_000, interval: 100 },
      ),
    close: () => receiver.close(),
  };
}
