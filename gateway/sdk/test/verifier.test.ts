import { createHash, createHmac } from "node:crypto";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { canonicalJson, type ProposedCard, Verifier } from "../src/index.ts";
import { es256Key, keySetServer } from "./key-server.ts";

/**
 * The offline checks against real ES256 keys made with Web Crypto and a key set served over HTTP: each refusal
 * verify-token gives, in its order, the caller's own checks, the key set's caching rules, and the proof's card.
 */

const issuer = "https://api.svc.test";
const organizationId = "org_7f3a";
const issuedAt = Date.parse("2026-11-28T10:00:00Z");

let key: Awaited<ReturnType<typeof es256Key>>;
let server: Awaited<ReturnType<typeof keySetServer>>;
let clock = issuedAt;
const now = () => clock;
const verifierAt = () => new Verifier({ issuer, jwksUrl: server.url, now });

beforeAll(async () => {
  key = await es256Key("k1");
  server = await keySetServer([key.jwk]);
});
afterAll(() => server.close());

const claims = (overrides: Record<string, unknown> = {}) => ({
  iss: issuer,
  request_id: "req_0123456789abcdef0123456789abcdef",
  verified: true,
  organization_id: organizationId,
  audience: organizationId,
  nonce: "n1",
  issued_at: issuedAt / 1000,
  expires_at: issuedAt / 1000 + 120,
  exp: issuedAt / 1000 + 120,
  trusted: false,
  ...overrides,
});

const b64 = (value: object | string) =>
  Buffer.from(typeof value === "string" ? value : JSON.stringify(value)).toString("base64url");

describe("verifyAttestation", () => {
  test("accepts a token the key set's key signed for this organization and request, with typed claims", async () => {
    clock = issuedAt + 5_000;
    const result = await verifierAt().verifyAttestation(await key.sign(claims()), {
      organizationId,
      requestId: "req_0123456789abcdef0123456789abcdef",
      maxAgeSeconds: 60,
    });
    expect(result).toEqual({ valid: true, claims: expect.objectContaining({ verified: true, trusted: false }) });
  });

  test("refuses a token whose payload was changed after signing", async () => {
    clock = issuedAt + 5_000;
    const [header, , signature] = (await key.sign(claims())).split(".");
    const tampered = `${header}.${b64(claims({ organization_id: "org_other", audience: "org_other" }))}.${signature}`;
    expect(await verifierAt().verifyAttestation(tampered, { organizationId: "org_other" })).toEqual({
      valid: false,
      reason: "bad_signature",
    });
  });

  test("refuses an expired token and says when it expired", async () => {
    clock = issuedAt + 121_000;
    expect(await verifierAt().verifyAttestation(await key.sign(claims()), { organizationId })).toMatchObject({
      valid: false,
      reason: "expired",
      expiredAt: new Date(issuedAt + 120_000),
    });
  });

  test("refuses a token signed by another key under the published kid, and one naming a kid the set lacks", async () => {
    clock = issuedAt + 5_000;
    const impostor = await es256Key("k1");
    expect(await verifierAt().verifyAttestation(await impostor.sign(claims()), { organizationId })).toEqual({
      valid: false,
      reason: "bad_signature",
    });
    const stranger = await es256Key("k-unpublished");
    expect(await verifierAt().verifyAttestation(await stranger.sign(claims()), { organizationId })).toEqual({
      valid: false,
      reason: "unknown_key",
    });
  });

  test("refuses alg none and HS256 keyed with the public key for their algorithm", async () => {
    clock = issuedAt + 5_000;
    const unsecured = `${b64({ alg: "none", kid: "k1" })}.${b64(claims())}.`;
    expect(await verifierAt().verifyAttestation(unsecured, { organizationId })).toEqual({
      valid: false,
      reason: "unsupported_algorithm",
    });
    const input = `${b64({ alg: "HS256", kid: "k1", typ: "JWT" })}.${b64(claims())}`;
    const secret = JSON.stringify(key.jwk);
    const hs256 = `${input}.${createHmac("sha256", secret).update(input).digest("base64url")}`;
    expect(await verifierAt().verifyAttestation(hs256, { organizationId })).toEqual({
      valid: false,
      reason: "unsupported_algorithm",
    });
  });

  test("refuses a second check of the same token as replayed", async () => {
    clock = issuedAt + 5_000;
    const verifier = verifierAt();
    const token = await key.sign(claims());
    expect(await verifier.verifyAttestation(token, { organizationId })).toMatchObject({ valid: true });
    expect(await verifier.verifyAttestation(token, { organizationId })).toMatchObject({
      valid: false,
      reason: "replayed",
    });
  });

  test("refuses another issuer, another organization, another request, a token older than maxAgeSeconds, garbage, and critical header extensions", async () => {
    clock = issuedAt + 30_000;
    const verifier = verifierAt();
    const check = async (token: string, options: Parameters<Verifier["verifyAttestation"]>[1]) =>
      (await verifier.verifyAttestation(token, options)) as { reason?: string };
    expect((await check(await key.sign(claims({ iss: "https://evil.test" })), { organizationId })).reason).toBe(
      "wrong_issuer",
    );
    expect((await check(await key.sign(claims({ nonce: "a" })), { organizationId: "org_other" })).reason).toBe(
      "audience_mismatch",
    );
    expect(
      (await check(await key.sign(claims({ nonce: "b" })), { organizationId, requestId: "req_other" })).reason,
    ).toBe("request_id_mismatch");
    expect((await check(await key.sign(claims({ nonce: "c" })), { organizationId, maxAgeSeconds: 20 })).reason).toBe(
      "too_old",
    );
    expect((await check(await key.sign({ iss: issuer, jti: "x" }), { organizationId })).reason).toBe(
      "not_an_attestation",
    );
    expect((await check("not.a-token", { organizationId })).reason).toBe("malformed");
    expect(
      (await check(await key.sign(claims({ nonce: "d" }), { crit: ["b64"], b64: true }), { organizationId })).reason,
    ).toBe("bad_signature");
  });
});

describe("the key set", () => {
  test("is fetched once and cached by kid; an unknown kid refetches it at most once a minute", async () => {
    clock = issuedAt + 5_000;
    const verifier = verifierAt();
    const before = server.state.fetches;
    await verifier.verifyAttestation(await key.sign(claims({ nonce: "k1" })), { organizationId });
    await verifier.verifyAttestation(await key.sign(claims({ nonce: "k2" })), { organizationId });
    expect(server.state.fetches - before).toBe(1);
    const rotated = await es256Key("k2");
    const forged = await rotated.sign(claims({ nonce: "k3" }));
    expect(await verifier.verifyAttestation(forged, { organizationId })).toMatchObject({ reason: "unknown_key" });
    server.state.keys = [key.jwk, rotated.jwk];
    clock += 59_000;
    expect(await verifier.verifyAttestation(forged, { organizationId })).toMatchObject({ reason: "unknown_key" });
    expect(server.state.fetches - before).toBe(1);
    clock += 1_000;
    expect(
      await verifier.verifyAttestation(await rotated.sign(claims({ nonce: "k4" })), { organizationId }),
    ).toMatchObject({ valid: true });
    expect(server.state.fetches - before).toBe(2);
    server.state.keys = [key.jwk];
  });

  test("fetches the set again at once when the first fetch's connection is reset, and only once", async () => {
    clock = issuedAt + 5_000;
    const before = server.state.fetches;
    server.state.resets = 1;
    expect(
      await verifierAt().verifyAttestation(await key.sign(claims({ nonce: "r1" })), { organizationId }),
    ).toMatchObject({ valid: true });
    expect(server.state.fetches - before).toBe(2);
    server.state.resets = 2;
    const verifier = verifierAt();
    expect(await verifier.verifyAttestation(await key.sign(claims({ nonce: "r2" })), { organizationId })).toMatchObject(
      { reason: "unknown_key" },
    );
    expect(server.state.fetches - before).toBe(4);
    clock += 59_000;
    expect(
      await verifier.verifyAttestation(
        await key.sign(claims({ nonce: "r3", expires_at: clock / 1000 + 60, exp: clock / 1000 + 60 })),
        { organizationId },
      ),
    ).toMatchObject({ reason: "unknown_key" });
    expect(server.state.fetches - before).toBe(4);
  });

  test("keeps the keys it holds while the endpoint answers 503", async () => {
    clock = issuedAt + 5_000;
    const verifier = verifierAt();
    await verifier.verifyAttestation(await key.sign(claims({ nonce: "u1" })), { organizationId });
    server.state.unavailable = true;
    try {
      clock += 61_000;
      const unknown = await (await es256Key("k9")).sign(claims({ nonce: "u2" }));
      expect(await verifier.verifyAttestation(unknown, { organizationId })).toMatchObject({ reason: "unknown_key" });
      expect(
        await verifier.verifyAttestation(
          await key.sign(claims({ nonce: "u3", expires_at: clock / 1000 + 60, exp: clock / 1000 + 60 })),
          { organizationId },
        ),
      ).toMatchObject({ valid: true });
    } finally {
      server.state.unavailable = false;
    }
  });
});

describe("verifyProof", () => {
  const card: ProposedCard = {
    action: {
      summary_title: "Pay €12.50 to Acme",
      category: "payments",
      summary_detail: { label: "Card", value: "•••• 4242" },
    },
    adaptive_card_payload: {
      type: "AdaptiveCard",
      version: "1.5",
      body: [{ type: "TextBlock", text: "Order 7" }],
    },
  };
  /** Written out by hand from RFC 8785: members sorted, no whitespace; the SDK must produce exactly these bytes. */
  const canonical =
    '{"adaptive_card_payload":{"body":[{"text":"Order 7","type":"TextBlock"}],"type":"AdaptiveCard","version":"1.5"},' +
    '"category":"payments","summary_detail":{"label":"Card","value":"•••• 4242"},"summary_title":"Pay €12.50 to Acme"}';
  const digest = createHash("sha256").update(canonical, "utf8").digest("base64url");
  const requestId = "6f1c0b9e-4a7d-4c2b-9e1f-2d3c4b5a6978";
  const proofClaims = {
    iss: issuer,
    jti: requestId,
    iat: issuedAt / 1000,
    verdict: "approve",
    ceremony_id: "c1",
    card_id: "0d4c7c1e-0000-4000-8000-000000000001",
    agent_id: "a1",
    card_digest: digest,
    amr: ["sandbox"],
  };

  test("the card's canonical JSON is RFC 8785's", () => {
    const { action, adaptive_card_payload } = card;
    expect(canonicalJson({ ...action, adaptive_card_payload })).toBe(canonical);
  });

  test("accepts a proof of exactly this card, long after it was signed (a proof has no expiry)", async () => {
    clock = issuedAt + 30 * 86_400_000;
    expect(await verifierAt().verifyProof(await key.sign(proofClaims), { card, requestId })).toEqual({
      valid: true,
      claims: expect.objectContaining({ verdict: "approve", card_digest: digest }),
    });
  });

  test("refuses a proof when the card differs by one character, and a proof of another request", async () => {
    clock = issuedAt + 5_000;
    const proof = await key.sign(proofClaims);
    const oneCharacter = { ...card, action: { ...card.action, summary_title: "Pay €12.60 to Acme" } };
    expect(await verifierAt().verifyProof(proof, { card: oneCharacter })).toMatchObject({
      valid: false,
      reason: "card_mismatch",
    });
    expect(
      await verifierAt().verifyProof(proof, { card, requestId: "00000000-0000-4000-8000-000000000000" }),
    ).toMatchObject({ valid: false, reason: "request_id_mismatch" });
  });

  test("refuses a tampered proof, one under alg none, and an attestation presented as a proof", async () => {
    clock = issuedAt + 5_000;
    const [header, , signature] = (await key.sign(proofClaims)).split(".");
    const denied = `${header}.${b64({ ...proofClaims, verdict: "denied" })}.${signature}`;
    expect(await verifierAt().verifyProof(denied, { card })).toMatchObject({ reason: "bad_signature" });
    const unsecured = `${b64({ alg: "none", kid: "k1" })}.${b64(proofClaims)}.`;
    expect(await verifierAt().verifyProof(unsecured, { card })).toMatchObject({ reason: "unsupported_algorithm" });
    expect(await verifierAt().verifyProof(await key.sign(claims()), { card })).toMatchObject({
      reason: "not_a_proof",
    });
  });
});
