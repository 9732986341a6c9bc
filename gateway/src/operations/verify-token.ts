import { type AttestationVerification, attestationRefusals, checkAttestation } from "@svc/contracts/attestation";
import { ok } from "../http/route.ts";
import { defineRoute } from "../services.ts";

/**
 * `POST /sdk/verify-token`: the gateway checks the token against the key set it keeps
 * (the contracts package's attestation.ts, verifying-keys.ts), then the gateway's ledger of first checks
 * says whether the check is the first (replays), in the statement that decides the request's rate limits
 * (`records-token-checks`, rate-limits/token-checks.ts); an invalid token is a normal result. Field rules:
 * decisions.md ("verify-token result").
 */
export const verifyTokenRoute = defineRoute({
  operationId: "verifyToken",
  method: "POST",
  path: "/sdk/verify-token",
  summary: "Verify an attestation token once: signature, issuer, expiry, audience, and whether it was checked before.",
  auth: { accepts: [] },
  rateLimit: "records-token-checks",
  idempotencyScope: "token",
  input: {
    type: "object",
    properties: {
      token: { type: "string", minLength: 1, maxLength: 8192, description: "The attestation token (ES256 JWT)." },
      audience: {
        type: "string",
        minLength: 1,
        maxLength: 200,
        description:
          "The organization id the caller expects, compared with the token's `audience` claim (every token a gate issues carries its partner's organization id there); a token issued for another organization is then invalid (`audience_mismatch`).",
      },
    },
    required: ["token"],
  },
  envelope: "nested",
  output: {
    type: "object",
    properties: {
      valid: { type: "boolean" },
      reason: {
        type: "string",
        description: `Why the token is invalid (only when it is): ${attestationRefusals.join(", ")}.`,
      },
      expired_at: { type: "string", format: "date-time", description: "When an expired token expired." },
      verdict: { type: "string", enum: ["pass"], description: "Only on a valid token." },
      replayed: { type: "boolean", description: "The token was checked before." },
      claims: {
        type: "object",
        additionalProperties: true,
        description: "The token's claims, whenever the signature verified.",
      },
    },
    required: ["valid", "replayed"],
  },
  async handle(input, { services, recordTokenCheck }) {
    if (!recordTokenCheck) throw new Error("verify-token records its checks through the rate-limit stage");
    const result = await checkAttestation(input.token, input.audience, {
      keys: services.verifyingKeys,
      record: async (check) => services.ledgerHandover.first(check, await recordTokenCheck(check)),
      clock: services.clock,
    });
    return ok(verifyTokenResult(result));
  },
});

export interface VerifyTokenResult {
  valid: boolean;
  reason?: string;
  expired_at?: string;
  verdict?: "pass";
  replayed: boolean;
  claims?: Record<string, unknown>;
}

function verifyTokenResult(result: AttestationVerification): VerifyTokenResult {
  if (result.kind === "valid")
    return { valid: true, verdict: "pass", replayed: result.replayed, claims: result.claims };
  return {
    valid: false,
    reason: result.reason,
    ...(result.expiredAt ? { expired_at: result.expiredAt.toISOString() } : {}),
    replayed: result.replayed,
    ...(result.claims ? { claims: result.claims } : {}),
  };
}
