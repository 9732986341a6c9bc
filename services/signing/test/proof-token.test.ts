import { decodeProtectedHeader, jwtVerify } from "jose";
import { describe, expect, it } from "vitest";
import { invalidInput } from "../src/invalid-input.ts";
import { type ProofInput, proofClaims, signProof } from "../src/proof-token.ts";
import { testKey } from "./support.ts";

const issuer = "http://127.0.0.1:8080";
const input: ProofInput = {
  requestId: "7f1c0c39-6c7e-4b87-9d59-3f3b8f6d1a20",
  verdict: "approve",
  ceremonyId: "cer_1",
  cardId: "card_1",
  agentId: "agent_1",
  subject: "opaque-person-1",
  cardDigest: "47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU",
  amr: ["passkey"],
  signedAt: new Date("2026-11-20T10:00:00.999Z"),
};

describe("Proof of Resolution", () => {
  it("carries exactly the claims decisions.md settles, iat from signed_at, and no exp", () => {
    expect(proofClaims(input, issuer)).toEqual({
      iss: issuer,
      jti: input.requestId,
      iat: 1795168800,
      verdict: "approve",
      ceremony_id: "cer_1",
      card_id: "card_1",
      agent_id: "agent_1",
      sub: "opaque-person-1",
      card_digest: input.cardDigest,
      amr: ["passkey"],
    });
    expect(proofClaims({ ...input, verdict: "denied" }, issuer).verdict).toBe("denied");
  });

  it("has no sub when the card named its person by svc_user_id, and amr sandbox for a sandbox human", () => {
    const claims = proofClaims({ ...input, subject: undefined, amr: ["sandbox"] }, issuer);
    expect(claims).not.toHaveProperty("sub");
    expect(claims.amr).toEqual(["sandbox"]);
  });

  it("refuses a missing verdict, signed_at or id", () => {
    expect(() => proofClaims({ ...input, verdict: undefined }, issuer)).toThrow(
      invalidInput("verdict must be approve or denied"),
    );
    expect(() => proofClaims({ ...input, signedAt: undefined }, issuer)).toThrow(/signed_at/);
    expect(() => proofClaims({ ...input, ceremonyId: "" }, issuer)).toThrow(/ceremony_id/);
    expect(() => proofClaims({ ...input, cardDigest: "abc" }, issuer)).toThrow(/card_digest/);
    expect(() => proofClaims({ ...input, amr: [] }, issuer)).toThrow(/amr/);
    expect(() => proofClaims({ ...input, amr: ["pwd"] }, issuer)).toThrow(/amr/);
  });

  const decided = (subject: string, verdict: "approve" | "denied", at: string) => ({
    subject,
    verdict,
    ceremonyId: `cer_${subject}`,
    signedAt: new Date(at),
    amr: ["sandbox"],
  });

  it("adds a quorum card's thresholds and every counted decision to the usual claims", () => {
    const claims = proofClaims(
      {
        ...input,
        quorum: { approve: 2, deny: 1 },
        decisions: [
          decided("opaque-person-2", "approve", "2026-11-20T09:59:30.400Z"),
          decided("opaque-person-1", "approve", "2026-11-20T10:00:00.999Z"),
        ],
      },
      issuer,
    );
    expect(claims).toEqual({
      ...proofClaims(input, issuer),
      quorum: { approve: 2, deny: 1 },
      decisions: [
        {
          sub: "opaque-person-2",
          verdict: "approve",
          ceremony_id: "cer_opaque-person-2",
          iat: 1795168770,
          amr: ["sandbox"],
        },
        {
          sub: "opaque-person-1",
          verdict: "approve",
          ceremony_id: "cer_opaque-person-1",
          iat: 1795168800,
          amr: ["sandbox"],
        },
      ],
    });
  });

  it("refuses a quorum without decisions, decisions without a quorum, and a malformed decision", () => {
    const one = decided("opaque-person-2", "approve", "2026-11-20T09:59:30Z");
    expect(() => proofClaims({ ...input, quorum: { approve: 2, deny: 1 }, decisions: [] }, issuer)).toThrow(
      invalidInput("a quorum proof needs its decisions"),
    );
    expect(() => proofClaims({ ...input, decisions: [one] }, issuer)).toThrow(invalidInput("decisions need a quorum"));
    expect(() => proofClaims({ ...input, quorum: { approve: 0, deny: 1 }, decisions: [one] }, issuer)).toThrow(
      /quorum.approve/,
    );
    for (const bad of [
      { verdict: undefined },
      { subject: "" },
      { ceremonyId: "" },
      { signedAt: undefined },
      { amr: ["pwd"] },
    ])
      expect(() =>
        proofClaims({ ...input, quorum: { approve: 2, deny: 1 }, decisions: [{ ...one, ...bad }] }, issuer),
      ).toThrow(/decisions\[0\]/);
  });

  it("verifies with jose long after it was signed, with the key's kid in an ES256 header", async () => {
    const key = testKey();
    const { token, kid } = signProof(input, key.signer, issuer);
    expect(kid).toBe(key.kid);
    expect(decodeProtectedHeader(token)).toEqual({ alg: "ES256", kid: key.kid, typ: "JWT" });
    const { payload } = await jwtVerify(token, key.publicKey, {
      issuer,
      algorithms: ["ES256"],
      currentDate: new Date("2027-12-01T00:00:00Z"),
    });
    expect(payload.jti).toBe(input.requestId);
  });
});
