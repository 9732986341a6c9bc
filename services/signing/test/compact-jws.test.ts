import { jwtVerify } from "jose";
import { describe, expect, it } from "vitest";
import { signCompact } from "../src/compact-jws.ts";
import { testKey } from "./support.ts";

/** Signing's compact JWS, read by an independent implementation. */
describe("compact ES256 tokens", () => {
  it("produces compact tokens that jose verifies", async () => {
    const key = testKey();
    for (let i = 0; i < 50; i++) {
      const token = signCompact(key.signer, { n: i, iss: "test" });
      const { payload, protectedHeader } = await jwtVerify(token, key.publicKey, {
        algorithms: ["ES256"],
        issuer: "test",
      });
      expect(payload.n).toBe(i);
      expect(protectedHeader).toEqual({ alg: "ES256", kid: key.kid, typ: "JWT" });
    }
  });
});
