import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { createSecretBox, generateEndpointSecret } from "../src/endpoints/endpoint-secret.ts";

describe("endpoint secrets at rest (AES-256-GCM)", () => {
  const box = createSecretBox(randomBytes(32));

  it("seals a secret so that the stored bytes do not contain it, and opens it again", () => {
    const secret = generateEndpointSecret();
    const sealed = box.seal(secret, "ep_1");
    expect(sealed.includes(Buffer.from(secret))).toBe(false);
    expect(sealed.includes(Buffer.from(secret.slice(6), "base64"))).toBe(false);
    expect(box.open(sealed, "ep_1")).toBe(secret);
  });

  it("refuses a sealed secret moved to another endpoint, changed, or opened with another key", () => {
    const sealed = box.seal(generateEndpointSecret(), "ep_1");
    expect(() => box.open(sealed, "ep_2")).toThrow();
    const flipped = Buffer.from(sealed);
    flipped[flipped.length - 1]! ^= 1;
    expect(() => box.open(flipped, "ep_1")).toThrow();
    expect(() => createSecretBox(randomBytes(32)).open(sealed, "ep_1")).toThrow();
  });
});
