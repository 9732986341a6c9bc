import { Webhook } from "standardwebhooks";
import { describe, expect, test, vi } from "vitest";
import { Svc, SvcError, WebhookVerificationError } from "../src/index.ts";

/**
 * `svc.webhooks.verify` against deliveries signed by the Standard Webhooks reference signer: the event comes
 * back narrowed by `type`; a changed body, another secret, a missing header or a timestamp outside 5 minutes
 * is refused with a WebhookVerificationError (an SvcError), never a bare Error.
 */

const secret = `whsec_${Buffer.from("a webhook secret of 32 bytes....").toString("base64")}`;
const svc = new Svc({ apiKey: "svc_dev_example" });
const sent = Date.parse("2026-11-28T10:00:00Z");

function delivery(event: object, at = new Date(sent), signingSecret = secret) {
  const body = JSON.stringify(event);
  const id = "msg_2c4f";
  return {
    body,
    headers: {
      "webhook-id": id,
      "webhook-timestamp": String(Math.floor(at.getTime() / 1000)),
      "webhook-signature": new Webhook(signingSecret).sign(id, at, body),
    },
  };
}

const verified = {
  type: "gate.human_verified",
  event_id: "req_0123456789abcdef0123456789abcdef",
  request_id: "req_0123456789abcdef0123456789abcdef",
  verified_at: "2026-11-28T09:59:58Z",
  verdict: "pass",
  trusted: true,
  first_time: false,
  handle: "OP_abcdefABCDEF",
  environment: "development",
};

describe("svc.webhooks.verify", () => {
  test("returns the event, narrowed by type", () => {
    vi.useFakeTimers({ now: sent + 60_000, toFake: ["Date"] });
    try {
      const { body, headers } = delivery(verified);
      const event = svc.webhooks.verify(body, new Headers(headers), secret);
      expect(event).toEqual(verified);
      if (event.type !== "gate.human_verified") throw new Error("not narrowed");
      const handle: string | undefined = event.handle;
      expect(handle).toBe("OP_abcdefABCDEF");
      expect(svc.webhooks.verify(new TextEncoder().encode(body), headers, secret).type).toBe("gate.human_verified");
    } finally {
      vi.useRealTimers();
    }
  });

  test("refuses a changed body, another secret and a missing header", () => {
    vi.useFakeTimers({ now: sent, toFake: ["Date"] });
    try {
      const { body, headers } = delivery(verified);
      const refusal = (run: () => unknown) => {
        try {
          run();
        } catch (error) {
          expect(error).toBeInstanceOf(WebhookVerificationError);
          expect(error).toBeInstanceOf(SvcError);
          return error as SvcError;
        }
        throw new Error("accepted");
      };
      refusal(() => svc.webhooks.verify(body.replace('"trusted":true', '"trusted":false'), headers, secret));
      const other = `whsec_${Buffer.from("another secret of thirty-two b..").toString("base64")}`;
      refusal(() => svc.webhooks.verify(body, headers, other));
      const { "webhook-signature": _, ...unsigned } = headers;
      expect(refusal(() => svc.webhooks.verify(body, unsigned, secret)).message).toContain("webhook-signature");
    } finally {
      vi.useRealTimers();
    }
  });

  test("accepts a timestamp within 5 minutes either side and refuses one outside", () => {
    const { body, headers } = delivery(verified);
    for (const [offsetSeconds, accepted] of [
      [-299, true],
      [299, true],
      [-301, false],
      [301, false],
    ] as const) {
      vi.useFakeTimers({ now: sent - offsetSeconds * 1000, toFake: ["Date"] });
      try {
        const run = () => svc.webhooks.verify(body, headers, secret);
        if (accepted) expect(run()).toEqual(verified);
        else expect(run).toThrow(WebhookVerificationError);
      } finally {
        vi.useRealTimers();
      }
    }
  });
});
