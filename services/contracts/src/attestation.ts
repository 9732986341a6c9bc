import { createHash, type KeyObject, verify } from "node:crypto";
import type { Clock } from "@svc/platform/clock";
import { joseToDer } from "@svc/platform/es256-signature";

/**
 * The attestation token's contract, issuing and checking side in one module: the claims signing issues
 * (`services/signing/src/attestation-token.ts` builds them), and verify-token's rules, in the order they
 * run, with the reasons a token is refused (the root README lists them for partners). The gateway checks
 * every verify-token with these rules against the key set it keeps; signing's deprecated VerifyToken and
 * VerifyTokens use them against its ring. Everything but the replay rule is decided here; whether a check is
 * the first of its token is decided by signing's ledger, the one authority across every gateway replica,
 * which the caller consults between {@link examineAttestation} and {@link concludeAttestation} (or
 * {@link checkAttestation} for one token).
 */

/** How long an attestation token is valid after it is issued (interface spec: 120 seconds). */
export const attestationLifetimeSeconds = 120;

/**
 * The claims of the spec's attestation token, plus `iss`/`iat`/`exp` so standard JWT libraries enforce them.
 * Instants are ISO 8601 text, `issued_at`/`expires_at`/`iat`/`exp` seconds since the epoch.
 */
export type AttestationClaims = {
  request_id: string;
  verified: boolean;
  organization_id: string;
  /** Present when the token was issued for a named audience; it then decides `audience_mismatch`. */
  audience?: string;
  timestamp: string;
  nonce: string;
  issued_at: number;
  expires_at: number;
  /** Present for an age check only: over the threshold, under it, or null when it could not be told. */
  age_over?: boolean | null;
  trusted: boolean;
  trusted_since?: string;
  last_pass_at?: string;
  iss: string;
  iat: number;
  exp: number;
};

/** Why verify-token refuses a token, in the order the rules run. */
export const attestationRefusals = [
  "malformed",
  "unsupported_algorithm",
  "unknown_key",
  "bad_signature",
  "wrong_issuer",
  "not_an_attestation",
  "expired",
  "audience_mismatch",
  "replayed",
] as const;
export type AttestationRefusal = (typeof attestationRefusals)[number];

/**
 * A received token's claims: a JSON object as decoded from its payload, which nothing but the rules below
 * vouches for. Typed by the names of {@link AttestationClaims}, so the rules can read only what signing
 * issues; the object keeps every member it was sent with.
 */
export type ReceivedClaims = { readonly [name in keyof AttestationClaims]?: unknown };

export type AttestationVerification =
  | { kind: "valid"; claims: ReceivedClaims; replayed: boolean }
  | {
      kind: "invalid";
      reason: AttestationRefusal;
      claims?: ReceivedClaims;
      expiredAt?: Date;
      replayed: boolean;
    };

/** From this instant a second check of a token is invalid; before it, it is reported but still valid. */
const replayRejectedFrom = new Date("2026-11-15T00:00:00Z").getTime();

/** What the ledger records of a token that passed every other rule. */
export interface AttestationLedgerCheck {
  /** SHA-256 of the payload segment: ECDSA signatures are malleable, so one token has several valid ones. */
  payloadHash: Buffer;
  expiresAt: Date;
}

export interface AttestationKeys {
  /** The issuer tokens must name, and the key published now under `kid` (undefined when there is none). */
  lookup(kid: string): Promise<{ issuer: string; key: KeyObject | undefined }>;
}

/** What the rules before the ledger found: a final answer, or a token that is valid unless it was checked before. */
export type ExaminedAttestation =
  | { kind: "decided"; verification: AttestationVerification }
  | { kind: "unrecorded"; claims: ReceivedClaims; check: AttestationLedgerCheck };

/** Every rule but the replay rule. `clock` is read once the key is known, for the expiry. */
export async function examineAttestation(
  token: string,
  audience: string | undefined,
  keys: AttestationKeys,
  clock: Clock,
): Promise<ExaminedAttestation> {
  const jws = parseCompact(token);
  if (jws === undefined) return decided("malformed");
  if (jws.header.alg !== "ES256") return decided("unsupported_algorithm");
  const kid = jws.header.kid;
  if (typeof kid !== "string") return decided("unknown_key");
  const { issuer, key } = await keys.lookup(kid);
  if (key === undefined) return decided("unknown_key");
  if (!verifyEs256(key, jws.signingInput, jws.signature)) return decided("bad_signature");

  const claims = jws.payload;
  if (claims.iss !== issuer) return decided("wrong_issuer", { claims });
  const expiresAt = expiryOf(claims);
  if (typeof claims.request_id !== "string" || typeof claims.verified !== "boolean" || expiresAt === undefined)
    return decided("not_an_attestation", { claims });
  if (expiresAt <= clock.now().getTime()) return decided("expired", { claims, expiredAt: new Date(expiresAt) });
  if (
    audience !== undefined &&
    (typeof claims.audience === "string" ? claims.audience : claims.organization_id) !== audience
  )
    return decided("audience_mismatch", { claims });

  const payloadHash = createHash("sha256").update(jws.payloadSegment).digest();
  return { kind: "unrecorded", claims, check: { payloadHash, expiresAt: new Date(expiresAt) } };
}

/** The answer for a token that passed every other rule, once the ledger said whether its check was the first. */
export function concludeAttestation(claims: ReceivedClaims, first: boolean, now: Date): AttestationVerification {
  if (!first && now.getTime() >= replayRejectedFrom) return invalid("replayed", { claims, replayed: true });
  return { kind: "valid", claims, replayed: !first };
}

/** One token through every rule; `record` asks the ledger whether this is the first check of it anywhere. */
export async function checkAttestation(
  token: string,
  audience: string | undefined,
  deps: { keys: AttestationKeys; record(check: AttestationLedgerCheck): Promise<boolean>; clock: Clock },
): Promise<AttestationVerification> {
  const examined = await examineAttestation(token, audience, deps.keys, deps.clock);
  if (examined.kind === "decided") return examined.verification;
  const first = await deps.record(examined.check);
  return concludeAttestation(examined.claims, first, deps.clock.now());
}

/** Milliseconds since the epoch. Our tokens carry equal `exp` and `expires_at`; should they differ, the earlier counts. */
function expiryOf(claims: ReceivedClaims): number | undefined {
  let earliest: number | undefined;
  for (const value of [claims.exp, claims.expires_at])
    if (typeof value === "number" && Number.isFinite(value) && (earliest === undefined || value < earliest))
      earliest = value;
  return earliest === undefined ? undefined : earliest * 1000;
}

function invalid(
  reason: AttestationRefusal,
  details: { claims?: ReceivedClaims; expiredAt?: Date; replayed?: boolean } = {},
): AttestationVerification {
  return { kind: "invalid", reason, ...details, replayed: details.replayed ?? false };
}

const decided = (
  reason: AttestationRefusal,
  details?: { claims?: ReceivedClaims; expiredAt?: Date },
): ExaminedAttestation => ({ kind: "decided", verification: invalid(reason, details) });

interface ParsedJws {
  header: Record<string, unknown>;
  payload: Record<string, unknown>;
  /** The payload exactly as sent: the signature covers these characters, so they identify the token. */
  payloadSegment: string;
  signingInput: Buffer;
  signature: Buffer;
}

const base64url = /^[A-Za-z0-9_-]+$/;
/** Empty is still the form: an unsecured (`alg: none`) token ends in a dot, and is refused for its algorithm. */
const signatureForm = /^[A-Za-z0-9_-]*$/;

/** Splits and decodes a compact JWS; undefined when it does not have that form. */
function parseCompact(token: string): ParsedJws | undefined {
  const firstDot = token.indexOf(".");
  const secondDot = token.indexOf(".", firstDot + 1);
  if (firstDot < 0 || secondDot < 0 || token.indexOf(".", secondDot + 1) >= 0) return undefined;
  const headerSegment = token.slice(0, firstDot);
  const payloadSegment = token.slice(firstDot + 1, secondDot);
  const signatureSegment = token.slice(secondDot + 1);
  if (!base64url.test(headerSegment) || !base64url.test(payloadSegment) || !signatureForm.test(signatureSegment))
    return undefined;
  const header = decodeObject(headerSegment);
  const payload = decodeObject(payloadSegment);
  if (header === undefined || payload === undefined) return undefined;
  return {
    header,
    payload,
    payloadSegment,
    signingInput: Buffer.from(token.slice(0, secondDot), "latin1"),
    signature: Buffer.from(signatureSegment, "base64url"),
  };
}

function decodeObject(segment: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(Buffer.from(segment, "base64url").toString("utf8"));
    return typeof value === "object" && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Checks a JOSE r‖s ES256 signature, wrapped in DER first (OpenSSL checks DER faster than Node converts
 * `ieee-p1363`). It runs on the event loop: handing it to libuv's thread pool cost more CPU per check
 * (the hand-over and the wake-up) than the parallelism gave back on two cores.
 */
function verifyEs256(publicKey: KeyObject, signingInput: Buffer, signature: Buffer): boolean {
  return signature.length === 64 && verify("sha256", signingInput, publicKey, joseToDer(signature));
}
