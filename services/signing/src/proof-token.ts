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
  /** A quorum card's thresholds; given together with `decisions`. */
  quorum?: { approve: number; deny: number } | undefined;
  /** A quorum card's counted decisions. */
  decisions?: readonly ProofDecision[] | undefined;
}

/** One approver's decision in a quorum proof. */
interface ProofDecision {
  subject: string;
  verdict: ProofVerdict | undefined;
  ceremonyId: string;
  signedAt: Date | undefined;
  amr: readonly string[];
}

const base64urlSha256 = /^[A-Za-z0-9_-]{43}$/;

/**
 * The claims decisions.md settles, and no others. A Proof of Resolution has no `exp`: it records a
 * decision and must stay verifiable offline long after it was made. How long its key stays published is
 * the proof retention (see README).
 */
export function proofClaims(input: ProofInput, issuer: string): JsonObject {
  return { ...decisionClaims(input, issuer), ...quorumClaims(input) };
}

const checkedAmr = (amr: readonly string[], field: string): string[] => {
  if (amr.length !== 1 || !methods.has(amr[0] ?? "")) throw invalidInput(`${field} must be ["passkey"] or ["sandbox"]`);
  return [...amr];
};

/** The claims of every proof: the deciding ceremony's, over the card. */
function decisionClaims(input: ProofInput, issuer: string): JsonObject {
  if (input.verdict === undefined) throw invalidInput("verdict must be approve or denied");
  if (!base64urlSha256.test(input.cardDigest))
    throw invalidInput("card_digest must be the base64url SHA-256 of the canonical card");
  const amr = checkedAmr(input.amr, "amr");
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
    amr,
  };
}

/**
 * A quorum proof's own claims: the thresholds and every counted decision, under the one signature of the
 * proof, so that an agent sees offline who decided what over the same card_digest.
 */
function quorumClaims(input: ProofInput): JsonObject {
  const decisions = input.decisions ?? [];
  if (input.quorum === undefined) {
    if (decisions.length > 0) throw invalidInput("decisions need a quorum");
    return {};
  }
  const { approve, deny } = input.quorum;
  if (!Number.isInteger(approve) || approve < 1 || !Number.isInteger(deny) || deny < 1)
    throw invalidInput("quorum.approve and quorum.deny must be at least 1");
  if (decisions.length === 0) throw invalidInput("a quorum proof needs its decisions");
  return {
    quorum: { approve, deny },
    decisions: decisions.map((decision, index) => {
      if (decision.verdict === undefined) throw invalidInput(`decisions[${index}].verdict must be approve or denied`);
      return {
        sub: requireText(decision.subject, `decisions[${index}].subject`),
        verdict: decision.verdict,
        ceremony_id: requireText(decision.ceremonyId, `decisions[${index}].ceremony_id`),
        iat: epochSeconds(requireInstant(decision.signedAt, `decisions[${index}].signed_at`)),
        amr: checkedAmr(decision.amr, `decisions[${index}].amr`),
      };
    }),
  };
}

export function signProof(input: ProofInput, signer: JwsSigner, issuer: string): { token: string; kid: string } {
  return { token: signCompact(signer, proofClaims(input, issuer)), kid: signer.kid };
}
