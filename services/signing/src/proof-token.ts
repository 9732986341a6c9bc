import type { JsonObject } from "@bufbuild/protobuf";
import { epochSeconds } from "@svc/platform";
import { type JwsSigner, signCompact } from "./compact-jws.ts";
import { invalidInput, requireInstant, requireText } from "./invalid-input.ts";

export type ProofVerdict = "approve" | "denied";

export interface ProofInput {
  requestId: string;
  /** Undefined when the caller named no verdict: there is no proof of an undecided proposal. */
  verdict: ProofVerdict | undefined;
  ceremonyId: string;
  cardId: string;
  resolutionId: string;
  agentId: string;
  organizationId: string;
  signedAt?: Date | undefined;
}

/**
 * A Proof of Resolution has no `exp`: it records a decision and must stay verifiable offline long
 * after it was made. How long its key stays published is the proof retention (see README).
 */
export function proofClaims(input: ProofInput, issuer: string): JsonObject {
  if (input.verdict === undefined) throw invalidInput("verdict must be approve or denied");
  return {
    iss: issuer,
    jti: requireText(input.requestId, "request_id"),
    verdict: input.verdict,
    iat: epochSeconds(requireInstant(input.signedAt, "signed_at")),
    ceremony_id: requireText(input.ceremonyId, "ceremony_id"),
    card_id: requireText(input.cardId, "card_id"),
    resolution_id: requireText(input.resolutionId, "resolution_id"),
    agent_id: requireText(input.agentId, "agent_id"),
    organization_id: requireText(input.organizationId, "organization_id"),
  };
}

export function signProof(input: ProofInput, signer: JwsSigner, issuer: string): { token: string; kid: string } {
  return { token: signCompact(signer, proofClaims(input, issuer)), kid: signer.kid };
}
