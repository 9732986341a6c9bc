import type { JsonObject } from "@bufbuild/protobuf";
import { epochSeconds } from "@svc/platform";
import { type JwsSigner, signCompact } from "./compact-jws.ts";
import { invalidInput, requireInstant, requireText } from "./invalid-input.ts";

export type ProofVerdict = "approve" | "denied";

/** How the person answered: their passkey, or (development only) a sandbox human's fixed behaviour. */
const methods = new Set(["passkey", "sandbox"]);

export interface ProofInput {
  requestId: string;
  /** Undefined when the caller named no verdict: there is no proof of an undecided proposal. */
  verdict: ProofVerdict | undefined;
  ceremonyId: string;
  cardId: string;
  agentId: string;
  /** The binding's opaque_id when the card named one; never a svc_user_id. */
  subject?: string | undefined;
  cardDigest: string;
  amr: readonly string[];
  signedAt?: Date | undefined;
}

const base64urlSha256 = /^[A-Za-z0-9_-]{43}$/;

/**
 * The claims decisions.md settles, and no others. A Proof of Resolution has no `exp`: it records a
 * decision and must stay verifiable offline long after it was made. How long its key stays published is
 * the proof retention (see README).
 */
export function proofClaims(input: ProofInput, issuer: string): JsonObject {
  if (input.verdict === undefined) throw invalidInput("verdict must be approve or denied");
  if (!base64urlSha256.test(input.cardDigest))
    throw invalidInput("card_digest must be the base64url SHA-256 of the canonical card");
  if (input.amr.length !== 1 || !methods.has(input.amr[0] ?? ""))
    throw invalidInput('amr must be ["passkey"] or ["sandbox"]');
  return {
    iss: issuer,
    jti: requireText(input.requestId, "request_id"),
    iat: epochSeconds(requireInstant(input.signedAt, "signed_at")),
    verdict: input.verdict,
    ceremony_id: requireText(input.ceremonyId, "ceremony_id"),
    card_id: requireText(input.cardId, "card_id"),
    agent_id: requireText(input.agentId, "agent_id"),
    ...(input.subject !== undefined && { sub: requireText(input.subject, "subject") }),
    card_digest: input.cardDigest,
    amr: [...input.amr],
  };
}

export function signProof(input: ProofInput, signer: JwsSigner, issuer: string): { token: string; kid: string } {
  return { token: signCompact(signer, proofClaims(input, issuer)), kid: signer.kid };
}
