import { DomainRefusal } from "@svc/platform";
import { decodeProtectedHeader, errors, jwtVerify } from "jose";
import { describe, expect, it } from "vitest";
import { type AttestationInput, attestationClaims, signAttestation } from "../src/attestation-token.ts";
import { invalidInput } from "../src/invalid-input.ts";
import { payloadOf, testKey } from "./support.ts";

const issuer = "http://127.0.0.1:8080";
const now = new Date("2026-11-20T10:00:00.700Z");
const verifiedAt = new Date("2026-11-20T09:59:58.123Z");
const context = { issuer, now, nonce: "n-1" };
const human: AttestationInput = {
  requestId: `req_${"a".repeat(32)}`,
  verified: true,
  organizationId: "org_1",
  verifiedAt,
  trusted: false,
};
const trust = { trusted: true, trustedSince: new Date("2026-01-02T03:04:05.000Z") };

const base = [
  "request_id",
  "verified",
  "organization_id",
  "timestamp",
  "nonce",
  "issued_at",
  "expires_at",
  "trusted",
  "iss",
  "iat",
  "exp",
];
const sorted = (keys: string[]) => [...keys].sort();

describe("attestation token claims", () => {
  it("a Human Gate pass of an unsecured account carries exactly the base claims", () => {
    const claims = attestationClaims(human, context);
    expect(sorted(Object.keys(claims))).toEqual(sorted(base));
    expect(claims).toEqual({
      request_id: human.requestId,
      verified: true,
      organization_id: "org_1",
      timestamp: "2026-11-20T09:59:58.123Z",
      nonce: "n-1",
      issued_at: 1795168800,
      expires_at: 1795168920,
      trusted: false,
      iss: issuer,
      iat: 1795168800,
      exp: 1795168920,
    });
  });

  it("a trusted pass adds trusted_since and last_pass_at (the verification itself unless given)", () => {
    expect(sorted(Object.keys(attestationClaims({ ...human, ...trust }, context)))).toEqual(
      sorted([...base, "trusted_since", "last_pass_at"]),
    );
    expect(attestationClaims({ ...human, ...trust }, context)).toMatchObject({
      trusted: true,
      trusted_since: "2026-01-02T03:04:05.000Z",
      last_pass_at: "2026-11-20T09:59:58.123Z",
    });
    const lastPassAt = new Date("2026-11-20T09:59:00.000Z");
    expect(attestationClaims({ ...human, ...trust, lastPassAt }, context).last_pass_at).toBe(
      "2026-11-20T09:59:00.000Z",
    );
  });

  it("an Age Gate adds age_over: true, false, or null when unavailable", () => {
    for (const [age, value] of [
      ["over", true],
      ["under", false],
      ["unavailable", null],
    ] as const) {
      const claims = attestationClaims({ ...human, age }, context);
      expect(sorted(Object.keys(claims))).toEqual(sorted([...base, "age_over"]));
      expect(claims.age_over).toBe(value);
    }
    expect(sorted(Object.keys(attestationClaims({ ...human, ...trust, age: "over" }, context)))).toEqual(
      sorted([...base, "age_over", "trusted_since", "last_pass_at"]),
    );
  });

  it("carries audience only when the token is issued for one", () => {
    expect(attestationClaims({ ...human, audience: "org_1" }, context).audience).toBe("org_1");
    expect("audience" in attestationClaims(human, context)).toBe(false);
  });

  it("refuses trusted without trusted_since, trust claims on an untrusted pass, and missing fields", () => {
    expect(() => attestationClaims({ ...human, trusted: true }, context)).toThrow(
      invalidInput("trusted_since is required when trusted is true"),
    );
    expect(() => attestationClaims({ ...human, trustedSince: trust.trustedSince }, context)).toThrow(DomainRefusal);
    expect(() => attestationClaims({ ...human, lastPassAt: now }, context)).toThrow(DomainRefusal);
    expect(() => attestationClaims({ ...human, verifiedAt: undefined }, context)).toThrow(/verified_at/);
    expect(() => attestationClaims({ ...human, requestId: "" }, context)).toThrow(/request_id/);
    expect(() => attestationClaims({ ...human, organizationId: " " }, context)).toThrow(/organization_id/);
    expect(() => attestationClaims({ ...human, audience: "" }, context)).toThrow(/audience/);
  });
});

describe("signed attestation tokens", () => {
  const key = testKey();

  it("have an ES256 header with kid and typ, a fresh nonce each, and a 120-second life", () => {
    const first = signAttestation(human, key.signer, { issuer, now });
    const second = signAttestation(human, key.signer, { issuer, now });
    expect(decodeProtectedHeader(first.token)).toEqual({ alg: "ES256", kid: key.kid, typ: "JWT" });
    expect(first.kid).toBe(key.kid);
    expect(payloadOf(first.token).nonce).not.toBe(payloadOf(second.token).nonce);
    expect(first.issuedAt).toEqual(new Date("2026-11-20T10:00:00.000Z"));
    expect(first.expiresAt).toEqual(new Date("2026-11-20T10:02:00.000Z"));
  });

  it("are enforced by a standard library: issuer and expiry", async () => {
    const { token } = signAttestation(human, key.signer, { issuer, now });
    const { payload } = await jwtVerify(token, key.publicKey, {
      issuer,
      algorithms: ["ES256"],
      currentDate: new Date("2026-11-20T10:01:59Z"),
    });
    expect(payload.request_id).toBe(human.requestId);
    await expect(
      jwtVerify(token, key.publicKey, { issuer, currentDate: new Date("2026-11-20T10:02:00Z") }),
    ).rejects.toBeInstanceOf(errors.JWTExpired);
    await expect(
      jwtVerify(token, key.publicKey, { issuer: "https://elsewhere.example", currentDate: now }),
    ).rejects.toBeInstanceOf(errors.JWTClaimValidationFailed);
  });
});
