import { create } from "@bufbuild/protobuf";
import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import { ManualClock } from "@svc/platform";
import {
  AgeResult,
  ProofVerdict,
  type SignAttestationRequest,
  SignAttestationRequestSchema,
  SignProofRequestSchema,
} from "@svc/proto/signing/v1/signing_pb.js";
import { createLocalJWKSet, type JSONWebKeySet, jwtVerify } from "jose";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../../../test/harness/index.ts";
import { checkToken, startTestSigning, testKek } from "./service-support.ts";

const issuer = "http://127.0.0.1:8080";

const attestationRequest = (
  clock: ManualClock,
  fields: Partial<Omit<SignAttestationRequest, "$typeName" | "$unknown">> = {},
) =>
  create(SignAttestationRequestSchema, {
    requestId: `req_${"c".repeat(32)}`,
    verified: true,
    organizationId: "org_a",
    verifiedAt: timestampFromDate(clock.now()),
    ...fields,
  });

describe("signing service over Connect", () => {
  let db: TestDatabase;
  let running: Awaited<ReturnType<typeof startTestSigning>>;
  const clock = new ManualClock("2026-11-01T12:00:00Z");

  beforeAll(async () => {
    db = await createTestDatabase("signing_rpc");
    running = await startTestSigning(db.url, { clock, env: { SIGNING_KEK: testKek() } });
  });
  afterAll(async () => {
    await running?.service.stop();
    await db?.drop();
  });

  const keySet = async (): Promise<JSONWebKeySet> => {
    const { keys } = await running.client.getKeySet({});
    return { keys: keys.map(({ kid, kty, crv, x, y, alg, use }) => ({ kid, kty, crv, x, y, alg, use })) };
  };

  it("signs a token that verifies once, then reads replayed but valid before 15 November 2026", async () => {
    const { client } = running;
    const signed = await client.signAttestation(attestationRequest(clock));
    expect(timestampDate(signed.issuedAt!)).toEqual(clock.now());
    expect(timestampDate(signed.expiresAt!).getTime() - clock.now().getTime()).toBe(120_000);

    const check = (token: string, audience?: string) => checkToken(client, token, clock, audience);
    const first = await check(signed.token, "org_a");
    expect(first).toMatchObject({ kind: "valid", replayed: false });
    expect(first.claims).toMatchObject({
      request_id: `req_${"c".repeat(32)}`,
      organization_id: "org_a",
      iss: issuer,
      trusted: false,
    });

    clock.advance(30_000);
    expect(await check(signed.token)).toMatchObject({ kind: "valid", replayed: true });
  });

  it("from 15 November 2026 a second check is invalid with reason replayed", async () => {
    clock.set("2026-11-15T00:00:00Z");
    const { client } = running;
    const { token } = await client.signAttestation(attestationRequest(clock));
    expect(await checkToken(client, token, clock)).toMatchObject({ kind: "valid", replayed: false });
    const second = await checkToken(client, token, clock);
    expect(second).toMatchObject({ kind: "invalid", reason: "replayed", replayed: true });
    expect(second.claims).toMatchObject({ request_id: `req_${"c".repeat(32)}` });
  });

  it("answers invalid tokens as a normal result: malformed without claims, expired with expired_at and claims", async () => {
    const { client } = running;
    const garbage = await checkToken(client, "not-a-token", clock);
    expect(garbage).toEqual({ kind: "invalid", reason: "malformed", replayed: false });

    const { token, expiresAt } = await client.signAttestation(attestationRequest(clock));
    clock.advance(120_000);
    expect(await checkToken(client, token, clock)).toMatchObject({
      kind: "invalid",
      reason: "expired",
      expiredAt: timestampDate(expiresAt!),
      claims: { organization_id: "org_a" },
    });
  });

  it("binds a token to an audience: another organization reads audience_mismatch", async () => {
    const { client } = running;
    const { token } = await client.signAttestation(
      attestationRequest(clock, { audience: "org_a", ageResult: AgeResult.UNAVAILABLE }),
    );
    expect(await checkToken(client, token, clock, "org_b")).toMatchObject({
      kind: "invalid",
      reason: "audience_mismatch",
      claims: { audience: "org_a", age_over: null },
    });
    expect(await checkToken(client, token, clock, "org_a")).toMatchObject({ kind: "valid", replayed: false });
  });

  it("lets anyone verify a token and a proof with jose against the key set", async () => {
    const { client } = running;
    const jwks = await keySet();
    expect(jwks.keys).toHaveLength(1);
    expect(jwks.keys[0]).toMatchObject({ kty: "EC", crv: "P-256", alg: "ES256", use: "sig" });

    const signed = await client.signAttestation(
      attestationRequest(clock, {
        trusted: true,
        trustedSince: timestampFromDate(new Date("2026-03-01T00:00:00Z")),
        ageResult: AgeResult.OVER,
      }),
    );
    const { payload, protectedHeader } = await jwtVerify(signed.token, createLocalJWKSet(jwks), {
      issuer,
      algorithms: ["ES256"],
      currentDate: clock.now(),
    });
    expect(protectedHeader).toEqual({ alg: "ES256", kid: signed.kid, typ: "JWT" });
    expect(payload).toMatchObject({
      trusted: true,
      trusted_since: "2026-03-01T00:00:00.000Z",
      age_over: true,
      iat: payload.issued_at,
      exp: payload.expires_at,
    });

    const signedAt = new Date("2026-11-15T00:00:05Z");
    const proof = await client.signProof(
      create(SignProofRequestSchema, {
        requestId: "0b9d7f0e-2c1f-4d8e-9a55-6c1c1b2f7e11",
        verdict: ProofVerdict.DENIED,
        ceremonyId: "cer_9",
        cardId: "card_9",
        agentId: "agent_9",
        cardDigest: "47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU",
        amr: ["passkey"],
        signedAt: timestampFromDate(signedAt),
      }),
    );
    const verifiedProof = await jwtVerify(proof.token, createLocalJWKSet(jwks), {
      issuer,
      algorithms: ["ES256"],
      currentDate: new Date("2027-06-01T00:00:00Z"),
    });
    expect(verifiedProof.payload).toMatchObject({
      jti: "0b9d7f0e-2c1f-4d8e-9a55-6c1c1b2f7e11",
      verdict: "denied",
      iat: signedAt.getTime() / 1000,
      ceremony_id: "cer_9",
      card_digest: "47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU",
      amr: ["passkey"],
    });
    expect(verifiedProof.payload.exp).toBeUndefined();
    expect(verifiedProof.payload.sub).toBeUndefined();
    expect(await checkToken(client, proof.token, clock)).toMatchObject({
      kind: "invalid",
      reason: "not_an_attestation",
    });
  });

  it("refuses bad sign requests with InvalidArgument", async () => {
    const { client } = running;
    const code = (promise: Promise<unknown>) =>
      promise.then(
        () => "resolved",
        (error: unknown) => ConnectError.from(error).code,
      );
    expect(await code(client.signAttestation(attestationRequest(clock, { trusted: true })))).toBe(Code.InvalidArgument);
    expect(await code(client.signAttestation(attestationRequest(clock, { verifiedAt: undefined })))).toBe(
      Code.InvalidArgument,
    );
    expect(await code(client.signAttestation(attestationRequest(clock, { ageResult: 42 as AgeResult })))).toBe(
      Code.InvalidArgument,
    );
    const proof = {
      requestId: "r",
      ceremonyId: "c",
      cardId: "k",
      agentId: "a",
      cardDigest: "47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU",
      amr: ["sandbox"],
      signedAt: timestampFromDate(clock.now()),
    };
    expect(
      await code(client.signProof(create(SignProofRequestSchema, { ...proof, verdict: ProofVerdict.UNSPECIFIED }))),
    ).toBe(Code.InvalidArgument);
    expect(
      await code(client.signProof(create(SignProofRequestSchema, { ...proof, verdict: ProofVerdict.APPROVE }))),
    ).toBe("resolved");
  });

  it("of many concurrent first checks of one token, exactly one is first", async () => {
    const { client } = running;
    const { token } = await client.signAttestation(attestationRequest(clock));
    const results = await Promise.all(Array.from({ length: 24 }, () => checkToken(client, token, clock)));
    expect(results.filter((result) => !result.replayed)).toHaveLength(1);
    expect(results.filter((result) => result.kind === "valid")).toHaveLength(1);
    expect(results.filter((result) => result.kind === "invalid" && result.reason === "replayed")).toHaveLength(23);
  });

  it("prunes ledger rows ten minutes after their tokens expired", async () => {
    const { client } = running;
    const { token, expiresAt } = await client.signAttestation(attestationRequest(clock));
    await checkToken(client, token, clock);
    const ledger = async () => {
      const sql = new pg.Client({ connectionString: db.url });
      await sql.connect();
      const { rows } = await sql.query<{ expires_at: Date }>(`select expires_at from signing.token_check`);
      await sql.end();
      return rows.map((row) => row.expires_at.getTime());
    };
    const expiry = timestampDate(expiresAt!).getTime();
    const before = await ledger();
    expect(before).toContain(expiry);
    expect(before.some((at) => at < expiry)).toBe(true);

    clock.set(new Date(expiry + 10 * 60_000));
    await running.service.maintain();
    const kept = await ledger();
    expect(kept.length).toBeGreaterThan(0);
    expect(kept.every((at) => at === expiry)).toBe(true);
    clock.advance(1);
    await running.service.maintain();
    expect(await ledger()).toEqual([]);
  });

  it("answers Unavailable, not a guess, when the replay ledger cannot record a check", async () => {
    const { client } = running;
    const { token } = await client.signAttestation(attestationRequest(clock));
    const sql = new pg.Client({ connectionString: db.url });
    await sql.connect();
    await sql.query(`alter table signing.token_check rename to token_check_away`);
    try {
      const failure = await checkToken(client, token, clock).then(
        () => undefined,
        (error: unknown) => ConnectError.from(error),
      );
      expect(failure?.code).toBe(Code.Unavailable);
    } finally {
      await sql.query(`alter table signing.token_check_away rename to token_check`);
      await sql.end();
    }
    expect(await checkToken(client, token, clock)).toMatchObject({ kind: "valid", replayed: false });
  });

  it("is ready on /readyz and healthy on /healthz", async () => {
    expect((await fetch(`${running.service.url}/readyz`)).status).toBe(200);
    expect((await fetch(`${running.service.url}/healthz`)).status).toBe(200);
  });
});
