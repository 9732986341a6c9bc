import { createHash, type KeyObject } from "node:crypto";
import type { JsonObject } from "@bufbuild/protobuf";
import { parseCompact, verifyEs256 } from "./compact-jws.ts";
import type { ReplayLedger } from "./replay-ledger.ts";

/** Reason strings of an invalid result, in the order the checks run (README lists them for partners). */
export type InvalidReason =
  | "malformed"
  | "unsupported_algorithm"
  | "unknown_key"
  | "bad_signature"
  | "wrong_issuer"
  | "not_an_attestation"
  | "expired"
  | "audience_mismatch"
  | "replayed";

export type Verification =
  | { kind: "valid"; claims: JsonObject; replayed: boolean }
  | { kind: "invalid"; reason: InvalidReason; claims?: JsonObject; expiredAt?: Date; replayed: boolean };

/** From this instant a second check of a token is invalid; before it, it is reported but still valid. */
export const replayRejectedFrom = new Date("2026-11-15T00:00:00Z");

export interface VerificationContext {
  issuer: string;
  now: Date;
  publishedKey(kid: string, now: Date): Promise<KeyObject | undefined> | KeyObject | undefined;
  ledger: ReplayLedger;
}

export async function verifyAttestation(token: string, audience: string | undefined, context: VerificationContext): Promise<Verification> {
  const { now } = context;
  const jws = parseCompact(token);
  if (jws === undefined) return invalid("malformed");
  if (jws.header.alg !== "ES256") return invalid("unsupported_algorithm");
  const kid = jws.header.kid;
  const publicKey = typeof kid === "string" ? await context.publishedKey(kid, now) : undefined;
  if (publicKey === undefined) return invalid("unknown_key");
  if (!verifyEs256(publicKey, jws.signingInput, jws.signature)) return invalid("bad_signature");

  const claims = jws.payload;
  if (claims.iss !== context.issuer) return invalid("wrong_issuer", { claims });
  const expiresAt = expiryOf(claims);
  if (typeof claims.request_id !== "string" || typeof claims.verified !== "boolean" || expiresAt === undefined) return invalid("not_an_attestation", { claims });
  if (expiresAt <= now.getTime()) return invalid("expired", { claims, expiredAt: new Date(expiresAt) });
  if (audience !== undefined && (typeof claims.audience === "string" ? claims.audience : claims.organization_id) !== audience) {
    return invalid("audience_mismatch", { claims });
  }

  // The payload, not the signature: ECDSA signatures are malleable, so one token has several valid ones.
  const tokenKey = createHash("sha256").update(jws.payloadSegment).digest();
  const replayed = !(await context.ledger.recordCheck(tokenKey, now, new Date(expiresAt)));
  if (replayed && now >= replayRejectedFrom) return invalid("replayed", { claims, replayed });
  return { kind: "valid", claims, replayed };
}

/** Milliseconds since the epoch. Our tokens carry equal `exp` and `expires_at`; should they differ, the earlier counts. */
function expiryOf(claims: JsonObject): number | undefined {
  const seconds = [claims.exp, claims.expires_at].filter((value): value is number => typeof value === "number" && Number.isFinite(value));
  return seconds.length === 0 ? undefined : Math.min(...seconds) * 1000;
}

function invalid(reason: InvalidReason, details: { claims?: JsonObject; expiredAt?: Date; replayed?: boolean } = {}): Verification {
  return { kind: "invalid", reason, ...details, replayed: details.replayed ?? false };
}
