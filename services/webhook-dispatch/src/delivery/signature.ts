import { createHmac, createSecretKey, type KeyObject } from "node:crypto";
import { epochSeconds } from "@svc/platform";

/**
 * Standard Webhooks signing: `v1,<base64 HMAC-SHA256 of "id.timestamp.body">`, keyed with the bytes
 * after `whsec_`. While a rotated secret is still honoured, one signature per secret, space-separated.
 */
const secretPrefix = "whsec_";

/** A KeyObject, not the raw bytes: Node 24's HMAC is several times slower when handed a Buffer each time. */
export function signingKey(secret: string): KeyObject {
  if (!secret.startsWith(secretPrefix)) throw new Error("a webhook secret starts with whsec_");
  return createSecretKey(Buffer.from(secret.slice(secretPrefix.length), "base64"));
}

function sign(key: KeyObject, webhookId: string, timestamp: number, body: Buffer): string {
  return `v1,${createHmac("sha256", key).update(`${webhookId}.${timestamp}.`).update(body).digest("base64")}`;
}

/** The headers of one attempt; `at` is the attempt's own time, so each retry carries a fresh timestamp. */
export function webhookHeaders(options: {
  webhookId: string;
  at: Date;
  body: Buffer;
  keys: readonly KeyObject[];
}): Record<string, string> {
  const timestamp = epochSeconds(options.at);
  return {
    "webhook-id": options.webhookId,
    "webhook-timestamp": String(timestamp),
    "webhook-signature": options.keys.map((key) => sign(key, options.webhookId, timestamp, options.body)).join(" "),
    "content-type": "application/json",
  };
}
