import { createHash, type KeyObject, verify } from "node:crypto";
import type { Clock } from "@svc/platform";

/**
 * verify-token's rules, in the order they run; the first that fails gives the reason (the root README
 * lists them for partners). Everything but the replay rule is decided here, against the key set kept in
 * memory ({@link VerifyingKeys}); whether a check is the first of its token is decided by signing's
 * ledger, the one authority across every gateway replica.
 */
type InvalidReason =
  | "malformed"
  | "unsupported_algorithm"
  | "unknown_key"
  | "bad_signature"
  | "wrong_issuer"
  | "not_an_attestation"
  | "expired"
  | "audience_mismatch"
  | "replayed";

type Claims = Record<string, unknown>;

export type TokenVerification =
  | { kind: "valid"; claims: Claims; replayed: boolean }
  | { kind: "invalid"; reason: InvalidReason; claims?: Claims; expiredAt?: Date; replayed: boolean };

/** From this instant a second check of a token is invalid; before it, it is reported but still valid. */
const replayRejectedFrom = new Date("2026-11-15T00:00:00Z").getTime();

export interface LedgerCheck {
  /** SHA-256 of the payload segment: ECDSA signatures are malleable, so one token has several valid ones. */
  payloadHash: Buffer;
  expiresAt: Date;
}

export interface TokenCheckDependencies {
  keys: { lookup(kid: string): Promise<{ issuer: string; key: KeyObject | undefined }> };
  /** Records the check in the shared ledger; true only for the first check of its token anywhere. */
  record(check: LedgerCheck): Promise<boolean>;
  clock: Clock;
}

export async function checkAttestation(
  token: string,
  audience: string | undefined,
  deps: TokenCheckDependencies,
): Promise<TokenVerification> {
  const jws = parseCompact(token);
  if (jws === undefined) return invalid("malformed");
  if (jws.header.alg !== "ES256") return invalid("unsupported_algorithm");
  const kid = jws.header.kid;
  if (typeof kid !== "string") return invalid("unknown_key");
  const { issuer, key } = await deps.keys.lookup(kid);
  if (key === undefined) return invalid("unknown_key");
  if (!verifyEs256(key, jws.signingInput, jws.signature)) return invalid("bad_signature");

  const claims = jws.payload;
  if (claims.iss !== issuer) return invalid("wrong_issuer", { claims });
  const expiresAt = expiryOf(claims);
  if (typeof claims.request_id !== "string" || typeof claims.verified !== "boolean" || expiresAt === undefined)
    return invalid("not_an_attestation", { claims });
  const now = deps.clock.now().getTime();
  if (expiresAt <= now) return invalid("expired", { claims, expiredAt: new Date(expiresAt) });
  if (
    audience !== undefined &&
    (typeof claims.audience === "string" ? claims.audience : claims.organization_id) !== audience
  )
    return invalid("audience_mismatch", { claims });

  const payloadHash = createHash("sha256").update(jws.payloadSegment).digest();
  const first = await deps.record({ payloadHash, expiresAt: new Date(expiresAt) });
  if (!first && now >= replayRejectedFrom) return invalid("replayed", { claims, replayed: true });
  return { kind: "valid", claims, replayed: !first };
}

/** Milliseconds since the epoch. Our tokens carry equal `exp` and `expires_at`; should they differ, the earlier counts. */
function expiryOf(claims: Claims): number | undefined {
  let earliest: number | undefined;
  for (const value of [claims.exp, claims.expires_at])
    if (typeof value === "number" && Number.isFinite(value) && (earliest === undefined || value < earliest))
      earliest = value;
  return earliest === undefined ? undefined : earliest * 1000;
}

function invalid(
  reason: InvalidReason,
  details: { claims?: Claims; expiredAt?: Date; replayed?: boolean } = {},
): TokenVerification {
  return { kind: "invalid", reason, ...details, replayed: details.replayed ?? false };
}

interface ParsedJws {
  header: Claims;
  payload: Claims;
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

function decodeObject(segment: string): Claims | undefined {
  try {
    const value: unknown = JSON.parse(Buffer.from(segment, "base64url").toString("utf8"));
    return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Claims) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Checks a JOSE r‖s ES256 signature. Node checks DER faster than its own `ieee-p1363` conversion, so the
 * two halves are wrapped in DER here. It runs on the event loop: handing it to libuv's thread pool cost
 * more CPU per check (the hand-over and the wake-up) than the parallelism gave back on two cores.
 */
function verifyEs256(publicKey: KeyObject, signingInput: Buffer, signature: Buffer): boolean {
  return signature.length === 64 && verify("sha256", signingInput, publicKey, derSignature(signature));
}

/** DER `SEQUENCE { INTEGER r, INTEGER s }` of a 64-byte r‖s signature (each half at most 33 bytes, so short lengths). */
function derSignature(raw: Buffer): Buffer {
  const r = derInteger(raw.subarray(0, 32));
  const s = derInteger(raw.subarray(32, 64));
  return Buffer.concat([Buffer.from([0x30, r.length + s.length]), r, s]);
}

/** A DER INTEGER of an unsigned big-endian value: no leading zeros, but one when the high bit would read as a sign. */
function derInteger(unsigned: Buffer): Buffer {
  let start = 0;
  while (start < unsigned.length - 1 && unsigned[start] === 0) start++;
  const digits = unsigned.subarray(start);
  const padded = ((digits[0] ?? 0) & 0x80) !== 0;
  return Buffer.concat([
    Buffer.from([0x02, digits.length + (padded ? 1 : 0)]),
    padded ? Buffer.from([0]) : Buffer.alloc(0),
    digits,
  ]);
}
