import type { KeyObject } from "node:crypto";
import { type AttestationVerification, concludeAttestation, examineAttestation } from "@svc/contracts/attestation";
import type { ReplayLedger } from "./replay-ledger.ts";

/**
 * The deprecated VerifyToken and VerifyTokens: verify-token's rules are the attestation contract's
 * (`@svc/contracts/attestation`, the copy the gateway checks with too), applied against this service's ring;
 * the replay rule is this service's ledger.
 */
export type Verification = AttestationVerification;

export interface VerificationContext {
  issuer: string;
  now: Date;
  publishedKey(kid: string, now: Date): Promise<KeyObject | undefined> | KeyObject | undefined;
  ledger: ReplayLedger;
}

export interface VerificationRequest {
  token: string;
  audience?: string | undefined;
}

export async function verifyAttestation(
  token: string,
  audience: string | undefined,
  context: VerificationContext,
): Promise<Verification> {
  const [verification] = await verifyAttestations([{ token, audience }], context);
  if (!verification) throw new Error("verifyAttestations answered no verification for one token");
  return verification;
}

/**
 * Verifies tokens checked at the same instant, answering in their order. Every token gets the checks
 * of one token; the checks of those that pass them all are recorded in one ledger write, which decides
 * for each whether it is the first (of copies of one token in the same call, the first listed).
 */
export async function verifyAttestations(
  requests: readonly VerificationRequest[],
  context: VerificationContext,
): Promise<Verification[]> {
  const { issuer, now } = context;
  const keys = { lookup: async (kid: string) => ({ issuer, key: await context.publishedKey(kid, now) }) };
  const clock = { now: () => now };
  const examined = await Promise.all(
    requests.map((request) => examineAttestation(request.token, request.audience, keys, clock)),
  );
  const unrecorded = examined.filter((result) => result.kind === "unrecorded");
  const firsts =
    unrecorded.length === 0
      ? []
      : await context.ledger.recordChecks(
          unrecorded.map(({ check }) => ({ tokenKey: check.payloadHash, expiresAt: check.expiresAt })),
          now,
        );
  let next = 0;
  return examined.map((result) =>
    result.kind === "decided" ? result.verification : concludeAttestation(result.claims, firsts[next++] === true, now),
  );
}
