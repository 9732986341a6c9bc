import { randomUUID } from "node:crypto";
import { type AttestationClaims, attestationLifetimeSeconds } from "@svc/contracts/attestation";
import { epochSeconds } from "@svc/platform";
import { type JwsSigner, signCompact } from "./compact-jws.ts";
import { invalidInput, requireInstant, requireText } from "./invalid-input.ts";

export type AgeResult = "over" | "under" | "unavailable";

export interface AttestationInput {
  requestId: string;
  verified: boolean;
  organizationId: string;
  audience?: string | undefined;
  verifiedAt?: Date | undefined;
  /** Absent for a Human Gate. */
  age?: AgeResult | undefined;
  trusted: boolean;
  trustedSince?: Date | undefined;
  lastPassAt?: Date | undefined;
}

export interface AttestationContext {
  issuer: string;
  now: Date;
  nonce: string;
}

const ageOver: Record<AgeResult, boolean | null> = { over: true, under: false, unavailable: null };

/** The claims of the spec's attestation token, as the contracts package defines them, from one verification. */
export function attestationClaims(input: AttestationInput, context: AttestationContext): AttestationClaims {
  const verifiedAt = requireInstant(input.verifiedAt, "verified_at");
  if (input.audience !== undefined && input.audience.trim() === "")
    throw invalidInput("audience, when given, must not be empty");
  if (input.trusted && input.trustedSince === undefined)
    throw invalidInput("trusted_since is required when trusted is true");
  if (!input.trusted && (input.trustedSince !== undefined || input.lastPassAt !== undefined)) {
    throw invalidInput("trusted_since and last_pass_at must be absent when trusted is false");
  }
  const issuedAt = epochSeconds(context.now);
  const expiresAt = issuedAt + attestationLifetimeSeconds;
  return {
    request_id: requireText(input.requestId, "request_id"),
    verified: input.verified,
    organization_id: requireText(input.organizationId, "organization_id"),
    ...(input.audience !== undefined ? { audience: input.audience } : {}),
    timestamp: verifiedAt.toISOString(),
    nonce: context.nonce,
    issued_at: issuedAt,
    expires_at: expiresAt,
    ...(input.age !== undefined ? { age_over: ageOver[input.age] } : {}),
    trusted: input.trusted,
    ...(input.trusted
      ? {
          trusted_since: requireInstant(input.trustedSince, "trusted_since").toISOString(),
          // The pass that produced this token is the verification itself unless the caller says otherwise.
          last_pass_at: (input.lastPassAt ?? verifiedAt).toISOString(),
        }
      : {}),
    iss: context.issuer,
    iat: issuedAt,
    exp: expiresAt,
  };
}

export interface SignedAttestation {
  token: string;
  kid: string;
  issuedAt: Date;
  expiresAt: Date;
}

export function signAttestation(
  input: AttestationInput,
  signer: JwsSigner,
  context: { issuer: string; now: Date },
): SignedAttestation {
  const claims = attestationClaims(input, { ...context, nonce: randomUUID() });
  return {
    token: signCompact(signer, claims),
    kid: signer.kid,
    issuedAt: new Date(claims.iat * 1000),
    expiresAt: new Date(claims.exp * 1000),
  };
}
