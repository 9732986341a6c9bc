import { createHmac } from "node:crypto";
import { Webhook, WebhookVerificationError } from "standardwebhooks";
import { describe, expect, it, vi } from "vitest";
import { signingKey, webhookHeaders } from "../src/delivery/signature.ts";
import { generateEndpointSecret } from "../src/endpoints/endpoint-secret.ts";

const body = Buffer.from(JSON.stringify({ type: "gate.human_verified", event_id: "req_1", note: "é ✓" }));
const at = new Date("2026-11-22T10:00:00Z");

/** standardwebhooks checks the timestamp against Date.now; pin it to the instant of the attempt. */
function verifyAt<T>(now: Date, verify: () => T): T {
  const spy = vi.spyOn(Date, "now").mockReturnValue(now.getTime());
  try {
    return verify();
  } finally {
    spy.mockRestore();
  }
}

describe("Standard Webhooks signatures", () => {
  it("an independent receiver (the standardwebhooks package) accepts our signature over the exact body", () => {
    const secret = generateEndpointSecret();
    const headers = webhookHeaders({ webhookId: "msg_1", at, body, keys: [signingKey(secret)] });
    expect(headers).toMatchObject({
      "webhook-id": "msg_1",
      "webhook-timestamp": String(at.getTime() / 1000),
      "content-type": "application/json",
    });
    expect(headers["webhook-signature"]).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
    expect(verifyAt(at, () => new Webhook(secret).verify(body, headers))).toEqual(JSON.parse(body.toString()));
  });

  it("the signature is HMAC-SHA256 of id.timestamp.body keyed with the base64-decoded part after whsec_", () => {
    const secret = generateEndpointSecret();
    const headers = webhookHeaders({ webhookId: "msg_2", at, body, keys: [signingKey(secret)] });
    const expected = createHmac("sha256", Buffer.from(secret.slice("whsec_".length), "base64"))
      .update(`msg_2.${at.getTime() / 1000}.${body.toString()}`)
      .digest("base64");
    expect(headers["webhook-signature"]).toBe(`v1,${expected}`);
  });

  it("a tampered body, another id or an old timestamp is rejected by the receiver", () => {
    const secret = generateEndpointSecret();
    const headers = webhookHeaders({ webhookId: "msg_3", at, body, keys: [signingKey(secret)] });
    const receiver = new Webhook(secret);
    const tampered = Buffer.from(body.toString().replace("req_1", "req_2"));
    expect(() => verifyAt(at, () => receiver.verify(tampered, headers))).toThrow(WebhookVerificationError);
    expect(() => verifyAt(at, () => receiver.verify(body, { ...headers, "webhook-id": "msg_4" }))).toThrow(
      WebhookVerificationError,
    );
    const sixMinutesLater = new Date(at.getTime() + 6 * 60_000);
    expect(() => verifyAt(sixMinutesLater, () => receiver.verify(body, headers))).toThrow("Message timestamp too old");
  });

  it("two keys give two space-separated signatures, and each secret verifies on its own", () => {
    const [current, previous] = [generateEndpointSecret(), generateEndpointSecret()];
    const headers = webhookHeaders({ webhookId: "msg_5", at, body, keys: [signingKey(current), signingKey(previous)] });
    expect(headers["webhook-signature"]!.split(" ")).toHaveLength(2);
    for (const secret of [current, previous])
      expect(verifyAt(at, () => new Webhook(secret).verify(body, headers))).toBeDefined();
    expect(() => verifyAt(at, () => new Webhook(generateEndpointSecret()).verify(body, headers))).toThrow(
      WebhookVerificationError,
    );
  });

  it("secrets are whsec_ plus base64 of 32 random bytes", () => {
    const secret = generateEndpointSecret();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(secret.slice(6), "base64")).toHaveLength(32);
    expect(generateEndpointSecret()).not.toBe(secret);
  });
});
