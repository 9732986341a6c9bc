import { createECDH, randomBytes, randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { openedSubscriptions } from "../src/push/opened-subscriptions.ts";
import { pushSealing } from "../src/push/subscription-sealing.ts";

const sealing = pushSealing(randomBytes(32));
const production = { deployment: "production", hosts: ["push.example.com"] } as const;
const secret = (endpoint: string) => ({
  endpoint,
  p256dh: createECDH("prime256v1").generateKeys().toString("base64url"),
  auth: randomBytes(16).toString("base64url"),
});
const sealed = (id: string, value: ReturnType<typeof secret>) => sealing.seal(id, Buffer.from(JSON.stringify(value)));

describe("a subscription opened for sending", () => {
  it("gives the row's endpoint and keys, and the keys a registration rewrote in place on its next push", () => {
    const open = openedSubscriptions(sealing, production);
    const id = randomUUID();
    const first = secret("https://push.example.com/a");
    const opened = open(id, sealed(id, first));
    const point = Buffer.from(first.p256dh, "base64url");
    expect(opened).toEqual({
      url: new URL(first.endpoint),
      p256dh: point,
      key: expect.anything(),
      auth: Buffer.from(first.auth, "base64url"),
    });
    // The point, made the public key every push's ECDH uses.
    expect("key" in opened && opened.key.export({ format: "jwk" })).toEqual({
      kty: "EC",
      crv: "P-256",
      x: point.subarray(1, 33).toString("base64url"),
      y: point.subarray(33).toString("base64url"),
    });
    const again = secret("https://push.example.com/a");
    expect(open(id, sealed(id, again))).toMatchObject({ auth: Buffer.from(again.auth, "base64url") });
  });

  it("answers an endpoint off the policy with the policy's reason, and a row sealed for another id throws", () => {
    const open = openedSubscriptions(sealing, production);
    const id = randomUUID();
    expect(open(id, sealed(id, secret("https://evil.example.net/a")))).toEqual({
      refused: expect.stringContaining("endpoint"),
    });
    expect(() => open(randomUUID(), sealed(id, secret("https://push.example.com/a")))).toThrow(
      /does not open under ACCOUNT_PUSH_KEY/,
    );
  });
});
