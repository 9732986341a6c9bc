import { createHash } from "node:crypto";
import { ManualClock } from "@svc/platform";
import { SignJWT } from "jose";
import { describe, expect, it } from "vitest";
import { type AttestationInput, signAttestation } from "../src/attestation-token.ts";
import { signCompact } from "../src/compact-jws.ts";
import { signProof } from "../src/proof-token.ts";
import type { LedgerCheck, ReplayLedger } from "../src/replay-ledger.ts";
import { type Verification, verifyAttestation, verifyAttestations } from "../src/token-verification.ts";
import { testKey } from "./support.ts";

const issuer = "http://127.0.0.1:8080";
const key = testKey();
const human: AttestationInput = {
  requestId: `req_${"b".repeat(32)}`,
  verified: true,
  organizationId: "org_a",
  verifiedAt: new Date("2026-11-20T09:59:00Z"),
  trusted: false,
};

/** The ledger's contract in memory: a set, so the first record of a key is the only one that returns true. */
function memoryLedger(): ReplayLedger & { calls: number } {
  const seen = new Set<string>();
  const ledger = {
    calls: 0,
    async recordChecks(checks: readonly LedgerCheck[]) {
      ledger.calls++;
      return checks.map(({ tokenKey }) => {
        const hex = tokenKey.toString("hex");
        if (seen.has(hex)) return false;
        seen.add(hex);
        return true;
      });
    },
  };
  return ledger;
}

function verifier(clock: ManualClock, ledger = memoryLedger()) {
  return {
    ledger,
    verify: (token: string, audience?: string): Promise<Verification> =>
      verifyAttestation(token, audience, {
        issuer,
        now: clock.now(),
        publishedKey: (kid) => (kid === key.kid ? key.publicKey : undefined),
        ledger,
      }),
  };
}

const segment = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");

describe("verification reasons", () => {
  const clock = new ManualClock("2026-11-20T10:00:00Z");
  const token = () => signAttestation(human, key.signer, { issuer, now: clock.now() }).token;

  it("accepts a fresh token and returns its claims", async () => {
    const result = await verifier(clock).verify(token());
    expect(result).toMatchObject({
      kind: "valid",
      replayed: false,
      claims: { request_id: human.requestId, iss: issuer },
    });
  });

  it("malformed: not three base64url parts of JSON objects", async () => {
    const { verify } = verifier(clock);
    const [h, p, s] = token().split(".") as [string, string, string];
    for (const bad of [
      "",
      "abc",
      `${h}.${p}`,
      `${h}.${p}.${s}.${s}`,
      `${h}.${p}!.${s}`,
      `${Buffer.from("not json").toString("base64url")}.${p}.${s}`,
      `${segment([1])}.${p}.${s}`,
      `${h}.${segment(null)}.${s}`,
      `${h}..${s}`,
    ]) {
      expect(await verify(bad), bad).toEqual({ kind: "invalid", reason: "malformed", replayed: false });
    }
  });

  it("unsupported_algorithm: alg none, HS256 keyed with the public key, RS256", async () => {
    const { verify, ledger } = verifier(clock);
    const payload = signAttestation(human, key.signer, { issuer, now: clock.now() }).token.split(".")[1];
    expect(await verify(`${segment({ alg: "none", typ: "JWT" })}.${payload}.`)).toEqual({
      kind: "invalid",
      reason: "unsupported_algorithm",
      replayed: false,
    });
    // The classic confusion attack: the public key, which anyone has, used as an HMAC secret.
    const publicPem = key.publicKey.export({ format: "pem", type: "spki" });
    const hs256 = await new SignJWT({ request_id: human.requestId, verified: true, iss: issuer, exp: 1900000000 })
      .setProtectedHeader({ alg: "HS256", kid: key.kid })
      .sign(new TextEncoder().encode(publicPem as string));
    expect(await verify(hs256)).toMatchObject({ kind: "invalid", reason: "unsupported_algorithm" });
    expect(await verify(`${segment({ alg: "RS256", kid: key.kid })}.${payload}.${"A".repeat(342)}`)).toMatchObject({
      kind: "invalid",
      reason: "unsupported_algorithm",
    });
    expect(await verify(`${segment({ alg: "es256", kid: key.kid })}.${payload}.${"A".repeat(86)}`)).toMatchObject({
      kind: "invalid",
      reason: "unsupported_algorithm",
    });
    expect(ledger.calls).toBe(0);
  });

  it("unknown_key: a kid that is not published, or none", async () => {
    const { verify } = verifier(clock);
    const other = testKey();
    expect(await verify(signAttestation(human, other.signer, { issuer, now: clock.now() }).token)).toEqual({
      kind: "invalid",
      reason: "unknown_key",
      replayed: false,
    });
    const [, p, s] = token().split(".");
    expect(await verify(`${segment({ alg: "ES256" })}.${p}.${s}`)).toMatchObject({ reason: "unknown_key" });
  });

  it("bad_signature: a tampered payload, a signature of another key, a truncated signature; no claims", async () => {
    const { verify, ledger } = verifier(clock);
    const [h, p, s] = token().split(".") as [string, string, string];
    const claims = JSON.parse(Buffer.from(p, "base64url").toString());
    const tampered = `${h}.${segment({ ...claims, organization_id: "org_evil" })}.${s}`;
    expect(await verify(tampered)).toEqual({ kind: "invalid", reason: "bad_signature", replayed: false });
    const foreign = testKey();
    const foreignSignature = signCompact(foreign.signer, claims).split(".")[2];
    expect(await verify(`${h}.${p}.${foreignSignature}`)).toMatchObject({ reason: "bad_signature" });
    expect(await verify(`${h}.${p}.${s.slice(0, 40)}`)).toMatchObject({ reason: "bad_signature" });
    expect(await verify(`${h}.${p}.`)).toMatchObject({ reason: "bad_signature" });
    expect(ledger.calls).toBe(0);
  });

  it("wrong_issuer: signed by our key for another issuer; claims returned", async () => {
    const { verify } = verifier(clock);
    const elsewhere = signAttestation(human, key.signer, {
      issuer: "https://old-origin.example",
      now: clock.now(),
    }).token;
    expect(await verify(elsewhere)).toMatchObject({
      kind: "invalid",
      reason: "wrong_issuer",
      claims: { iss: "https://old-origin.example" },
    });
  });

  it("not_an_attestation: a Proof of Resolution is refused", async () => {
    const { verify } = verifier(clock);
    const proof = signProof(
      {
        requestId: "r",
        verdict: "approve",
        ceremonyId: "c",
        cardId: "k",
        agentId: "a",
        cardDigest: "47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU",
        amr: ["passkey"],
        signedAt: clock.now(),
      },
      key.signer,
      issuer,
    ).token;
    expect(await verify(proof)).toMatchObject({ kind: "invalid", reason: "not_an_attestation", claims: { jti: "r" } });
  });

  it("expired: at exp exactly, with expired_at and claims; valid one millisecond before", async () => {
    const issuedAt = new Date("2026-11-20T10:00:00Z");
    const signed = signAttestation(human, key.signer, { issuer, now: issuedAt });
    const later = new ManualClock(new Date(issuedAt.getTime() + 119_999));
    expect(await verifier(later).verify(signed.token)).toMatchObject({ kind: "valid" });
    later.advance(1);
    expect(await verifier(later).verify(signed.token)).toEqual({
      kind: "invalid",
      reason: "expired",
      expiredAt: new Date("2026-11-20T10:02:00Z"),
      claims: expect.objectContaining({ request_id: human.requestId }),
      replayed: false,
    });
  });

  it("audience_mismatch: the audience claim decides when present, organization_id otherwise", async () => {
    const { verify } = verifier(clock);
    const unbound = () => signAttestation(human, key.signer, { issuer, now: clock.now() }).token;
    const bound = (audience: string) =>
      signAttestation({ ...human, audience }, key.signer, { issuer, now: clock.now() }).token;
    expect(await verify(unbound(), "org_a")).toMatchObject({ kind: "valid" });
    expect(await verify(unbound(), "org_b")).toMatchObject({
      kind: "invalid",
      reason: "audience_mismatch",
      claims: { organization_id: "org_a" },
    });
    expect(await verify(bound("org_a"), "org_a")).toMatchObject({ kind: "valid" });
    expect(await verify(bound("org_x"), "org_a")).toMatchObject({ kind: "invalid", reason: "audience_mismatch" });
    expect(await verify(bound("org_x"))).toMatchObject({ kind: "valid" });
  });
});

describe("replay", () => {
  const secondCheck = async (at: string) => {
    const clock = new ManualClock("2026-11-14T23:59:00Z");
    const { verify } = verifier(clock);
    const { token } = signAttestation(human, key.signer, { issuer, now: clock.now() });
    const first = await verify(token);
    clock.set(at);
    return { first, second: await verify(token) };
  };

  it("before 15 November 2026 a second check is reported but still valid", async () => {
    const { first, second } = await secondCheck("2026-11-14T23:59:59.999Z");
    expect(first).toMatchObject({ kind: "valid", replayed: false });
    expect(second).toMatchObject({ kind: "valid", replayed: true, claims: { request_id: human.requestId } });
  });

  it("from 15 November 2026 a second check is invalid with reason replayed, claims still returned", async () => {
    const { first, second } = await secondCheck("2026-11-15T00:00:00Z");
    expect(first).toMatchObject({ kind: "valid", replayed: false });
    expect(second).toMatchObject({
      kind: "invalid",
      reason: "replayed",
      replayed: true,
      claims: { request_id: human.requestId },
    });
  });

  it("a re-encoded signature (ECDSA's s → n − s) is still the same token", async () => {
    const clock = new ManualClock("2026-11-20T10:00:00Z");
    const { verify } = verifier(clock);
    const { token } = signAttestation(human, key.signer, { issuer, now: clock.now() });
    const [h, p, s] = token.split(".") as [string, string, string];
    const raw = Buffer.from(s, "base64url");
    const n = BigInt("0xffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551");
    const flipped = (n - BigInt(`0x${raw.subarray(32).toString("hex")}`)).toString(16).padStart(64, "0");
    const malleated = `${h}.${p}.${Buffer.concat([raw.subarray(0, 32), Buffer.from(flipped, "hex")]).toString("base64url")}`;
    expect(await verify(token)).toMatchObject({ kind: "valid", replayed: false });
    expect(await verify(malleated)).toMatchObject({ kind: "invalid", reason: "replayed", replayed: true });
  });

  it("keys the ledger on the SHA-256 of the payload segment", async () => {
    const keys: string[] = [];
    const clock = new ManualClock("2026-11-20T10:00:00Z");
    const { token } = signAttestation(human, key.signer, { issuer, now: clock.now() });
    await verifyAttestation(token, undefined, {
      issuer,
      now: clock.now(),
      publishedKey: () => key.publicKey,
      ledger: {
        recordChecks: async (checks, checkedAt) =>
          checks.map(({ tokenKey, expiresAt }) => {
            keys.push(`${tokenKey.toString("hex")} ${checkedAt.toISOString()} ${expiresAt.toISOString()}`);
            return true;
          }),
      },
    });
    expect(keys).toEqual([
      `${createHash("sha256").update(token.split(".")[1]!).digest("hex")} 2026-11-20T10:00:00.000Z 2026-11-20T10:02:00.000Z`,
    ]);
  });
});

describe("verifying a batch", () => {
  const at = (instant: string) => {
    const clock = new ManualClock(instant);
    const ledger = memoryLedger();
    const fresh = (fields: Partial<AttestationInput> = {}) =>
      signAttestation({ ...human, ...fields }, key.signer, { issuer, now: clock.now() }).token;
    const verify = (requests: { token: string; audience?: string }[]) =>
      verifyAttestations(requests, {
        issuer,
        now: clock.now(),
        publishedKey: (kid) => (kid === key.kid ? key.publicKey : undefined),
        ledger,
      });
    return { clock, ledger, fresh, verify };
  };

  it("answers each token in order by the rules of one, with one ledger write for those that passed them", async () => {
    const { clock, ledger, fresh, verify } = at("2026-11-20T10:00:00Z");
    const expiring = fresh();
    clock.advance(120_000);
    const [h, p, s] = fresh().split(".") as [string, string, string];
    const first = fresh({ requestId: "req_first" });
    const last = fresh({ requestId: "req_last" });
    const results = await verify([
      { token: first },
      { token: "not-a-token" },
      { token: expiring },
      { token: `${h}.${segment({ ...JSON.parse(Buffer.from(p, "base64url").toString()), verified: false })}.${s}` },
      { token: fresh(), audience: "org_b" },
      { token: last, audience: "org_a" },
    ]);
    expect(results.map((result) => (result.kind === "valid" ? "valid" : result.reason))).toEqual([
      "valid",
      "malformed",
      "expired",
      "bad_signature",
      "audience_mismatch",
      "valid",
    ]);
    expect(results[0]).toMatchObject({ claims: { request_id: "req_first" }, replayed: false });
    expect(results[5]).toMatchObject({ claims: { request_id: "req_last" }, replayed: false });
    expect(results[2]).toMatchObject({ expiredAt: new Date("2026-11-20T10:02:00Z") });
    expect(ledger.calls).toBe(1);
    expect(await verify([{ token: first }, { token: last }])).toMatchObject([
      { reason: "replayed" },
      { reason: "replayed" },
    ]);
  });

  it("of copies of one token in one batch only the first listed is first; before 15 November 2026 the others stay valid", async () => {
    const { fresh, verify } = at("2026-11-14T23:59:59.999Z");
    const token = fresh();
    const results = await verify([{ token }, { token: fresh() }, { token }, { token }]);
    expect(results).toMatchObject([
      { kind: "valid", replayed: false },
      { kind: "valid", replayed: false },
      { kind: "valid", replayed: true },
      { kind: "valid", replayed: true },
    ]);
  });

  it("from 15 November 2026 the later copies in one batch are invalid with reason replayed", async () => {
    const { fresh, verify } = at("2026-11-15T00:00:00Z");
    const token = fresh();
    const results = await verify([{ token }, { token }]);
    expect(results[0]).toMatchObject({ kind: "valid", replayed: false });
    expect(results[1]).toMatchObject({
      kind: "invalid",
      reason: "replayed",
      replayed: true,
      claims: { request_id: human.requestId },
    });
  });

  it("leaves the ledger alone when no token passes the other checks, and answers an empty batch", async () => {
    const { ledger, verify } = at("2026-11-20T10:00:00Z");
    expect(await verify([{ token: "a.b.c" }, { token: "" }])).toMatchObject([
      { reason: "malformed" },
      { reason: "malformed" },
    ]);
    expect(await verify([])).toEqual([]);
    expect(ledger.calls).toBe(0);
  });
});
