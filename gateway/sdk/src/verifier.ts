import { canonicalJson, sha256Base64url } from "./canonical-json.ts";
import { KeySet } from "./key-set.ts";
import { type SignatureRefusal, verifiedClaims } from "./signed-token.ts";

/** The claims of an attestation token (a gate's signed result), as the spec lists them. */
export interface AttestationClaims {
  iss: string;
  request_id: string;
  verified: boolean;
  organization_id: string;
  /** The organization the token was issued for. */
  audience?: string;
  timestamp?: string;
  nonce?: string;
  /** Epoch seconds. */
  issued_at: number;
  /** Epoch seconds. */
  expires_at: number;
  /** Age Gate only: `true`, `false`, or `null` when the age result is unavailable. */
  age_over?: boolean | null;
  trusted: boolean;
  trusted_since?: string;
  last_pass_at?: string;
  [claim: string]: unknown;
}

/** verify-token's reasons, in its order, then the local checks that need the caller's own facts. */
export type AttestationRefusal =
  | SignatureRefusal
  | "wrong_issuer"
  | "not_an_attestation"
  | "expired"
  | "audience_mismatch"
  | "replayed"
  | "request_id_mismatch"
  | "too_old";

export type AttestationVerification =
  | { valid: true; claims: AttestationClaims }
  | { valid: false; reason: AttestationRefusal; claims?: AttestationClaims; expiredAt?: Date };

export interface AttestationCheck {
  /** Your organization's id: the token must be issued for it. */
  organizationId: string;
  /** The `request_id` you started: the token must be for it. */
  requestId?: string;
  /** Refuse a token issued longer ago than this (its lifetime is 120 seconds). */
  maxAgeSeconds?: number;
}

/** The claims of a Proof of Resolution, as decisions.md settles them. */
export interface ProofClaims {
  iss: string;
  /** The agent's `request_id`. */
  jti: string;
  iat: number;
  verdict: "approve" | "denied";
  ceremony_id: string;
  card_id: string;
  agent_id: string;
  /** The binding's `opaque_id` when the card named one. */
  sub?: string;
  card_digest: string;
  amr: string[];
  /** A quorum card's thresholds: approved at `approve` approvals, denied at `deny` denials. */
  quorum?: { approve: number; deny: number };
  /** A quorum card's counted decisions, each signed over the same `card_digest` by this one proof. */
  decisions?: { sub: string; verdict: "approve" | "denied"; ceremony_id: string; iat: number; amr: string[] }[];
  [claim: string]: unknown;
}

export type ProofRefusal = SignatureRefusal | "wrong_issuer" | "not_a_proof" | "request_id_mismatch" | "card_mismatch";

export type ProofVerification =
  | { valid: true; claims: ProofClaims }
  | { valid: false; reason: ProofRefusal; claims?: ProofClaims };

/** What the person saw: the `action` and `adaptive_card_payload` the agent sent to inquire. */
export interface ProposedCard {
  action: {
    summary_title: string;
    category: string;
    summary_detail?: { label: string; value: string };
    trusted_account_id?: string;
  };
  adaptive_card_payload?: Record<string, unknown> | null;
}

export interface VerifierOptions {
  /** `{api_origin}`: the `iss` of every token and proof. */
  issuer: string;
  /** `{jwks_url}`; by default `{api_origin}/.well-known/jwks.json`. */
  jwksUrl?: string;
  fetch?: typeof fetch;
  /** Milliseconds since the epoch. */
  now?: () => number;
}

/** From this instant a second check of a token is refused, as verify-token does (the spec's 15 November 2026). */
const replayRefusedFrom = Date.parse("2026-11-15T00:00:00Z");

/**
 * Checks attestation tokens and proofs offline, against the key set fetched once and cached by `kid`. A token
 * is meant to be checked once: this verifier remembers the tokens it accepted until they expire, and refuses a
 * second check of one as `replayed`. Only the `POST /sdk/verify-token` ledger knows checks made elsewhere.
 */
export class Verifier {
  private readonly keys: KeySet;
  private readonly issuer: string;
  private readonly now: () => number;
  /** Payload segment → expiry (ms) of every token accepted: ECDSA signatures are malleable, the payload is not. */
  private readonly checked = new Map<string, number>();
  private prunedAt = Number.NEGATIVE_INFINITY;

  constructor(options: VerifierOptions) {
    this.issuer = new URL(options.issuer).origin;
    this.now = options.now ?? Date.now;
    this.keys = new KeySet({
      url: options.jwksUrl ?? `${this.issuer}/.well-known/jwks.json`,
      ...(options.fetch && { fetch: options.fetch }),
      now: this.now,
    });
  }

  /**
   * The spec's local checklist, in verify-token's order: an ES256 signature by a key of the set (chosen by `kid`),
   * the issuer, an attestation's claims, the expiry, the organization; then the request id, the age of the token
   * and whether it was checked before. Read `trusted` and `age_over` from the claims before unlocking anything.
   */
  readonly verifyAttestation = async (token: string, check: AttestationCheck): Promise<AttestationVerification> => {
    const signed = await verifiedClaims(token, this.keys);
    if (signed.kind === "refused") return { valid: false, reason: signed.reason };
    const claims = signed.claims as AttestationClaims;
    if (claims.iss !== this.issuer) return { valid: false, reason: "wrong_issuer", claims };
    const expiresAt = expiryOf(claims);
    if (typeof claims.request_id !== "string" || typeof claims.verified !== "boolean" || expiresAt === undefined)
      return { valid: false, reason: "not_an_attestation", claims };
    const now = this.now();
    if (expiresAt <= now) return { valid: false, reason: "expired", claims, expiredAt: new Date(expiresAt) };
    const audience = typeof claims.audience === "string" ? claims.audience : claims.organization_id;
    if (audience !== check.organizationId || claims.organization_id !== check.organizationId)
      return { valid: false, reason: "audience_mismatch", claims };
    if (check.requestId !== undefined && claims.request_id !== check.requestId)
      return { valid: false, reason: "request_id_mismatch", claims };
    if (
      check.maxAgeSeconds !== undefined &&
      (typeof claims.issued_at !== "number" || now - claims.issued_at * 1000 > check.maxAgeSeconds * 1000)
    )
      return { valid: false, reason: "too_old", claims };
    if (!this.firstCheck(signed.payloadSegment, expiresAt, now) && now >= replayRefusedFrom)
      return { valid: false, reason: "replayed", claims };
    return { valid: true, claims };
  };

  /**
   * A Proof of Resolution: an ES256 signature by a key of the set, the issuer, a verdict, and a `card_digest`
   * equal to the one recomputed from the card the agent proposed, so the person saw exactly that card. A proof
   * has no expiry: it is evidence.
   */
  readonly verifyProof = async (
    proof: string,
    expected: { card: ProposedCard; requestId?: string },
  ): Promise<ProofVerification> => {
    const signed = await verifiedClaims(proof, this.keys);
    if (signed.kind === "refused") return { valid: false, reason: signed.reason };
    const claims = signed.claims as ProofClaims;
    if (claims.iss !== this.issuer) return { valid: false, reason: "wrong_issuer", claims };
    if (
      typeof claims.jti !== "string" ||
      (claims.verdict !== "approve" && claims.verdict !== "denied") ||
      typeof claims.card_digest !== "string"
    )
      return { valid: false, reason: "not_a_proof", claims };
    if (expected.requestId !== undefined && claims.jti !== expected.requestId)
      return { valid: false, reason: "request_id_mismatch", claims };
    if (claims.card_digest !== (await cardDigest(expected.card)))
      return { valid: false, reason: "card_mismatch", claims };
    return { valid: true, claims };
  };

  /**
   * Records a token's first check; false when it was checked before. Expired entries are dropped at most every
   * ten seconds, so a check does not walk the whole record.
   */
  private firstCheck(payloadSegment: string, expiresAt: number, now: number): boolean {
    if (now - this.prunedAt >= 10_000) {
      this.prunedAt = now;
      for (const [segment, expiry] of this.checked) if (expiry <= now) this.checked.delete(segment);
    }
    if (this.checked.has(payloadSegment)) return false;
    this.checked.set(payloadSegment, expiresAt);
    return true;
  }
}

/**
 * The `card_digest` of a proposal: base64url SHA-256 of the RFC 8785 JSON of what the person saw, the fields
 * the service's trust layer puts in it (title, detail, category, trusted account, the card payload).
 */
export function cardDigest(card: ProposedCard): Promise<string> {
  const { summary_title, category, summary_detail, trusted_account_id } = card.action;
  return sha256Base64url(
    canonicalJson({
      summary_title,
      category,
      summary_detail,
      trusted_account_id,
      adaptive_card_payload: card.adaptive_card_payload ?? undefined,
    }),
  );
}

/** Milliseconds since the epoch: the earlier of `exp` and `expires_at`, as verify-token reads it. */
function expiryOf(claims: Record<string, unknown>): number | undefined {
  const seconds = [claims.exp, claims.expires_at].filter(
    (value): value is number => typeof value === "number" && Number.isFinite(value),
  );
  return seconds.length === 0 ? undefined : Math.min(...seconds) * 1000;
}
