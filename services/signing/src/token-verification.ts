import { createHash, type KeyObject } from "node:crypto";
import type { JsonObject } from "@bufbuild/protobuf";
import { parseCompact, verifyEs256 } from "./compact-jws.ts";
import type { LedgerCheck, ReplayLedger } from "./replay-ledger.ts";

/** Reason strings of an invalid result, in the order the checks run (README lists them for partners). */
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

export type Verification =
  | { kind: "valid"; claims: JsonObject; replayed: boolean }
  | { kind: "invalid"; reason: InvalidReason; claims?: JsonObject; expiredAt?: Date; replayed: boolean };

/** From this instant a second check of a token is invalid; before it, it is reported but still valid. */
const replayRejectedFrom = new Date("2026-11-15T00:00:00Z");

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

/** What the checks before the ledger found: a final answer, or a token that is valid unless it was checked before. */
type Examined =
  | { kind: "decided"; verification: Verification }
  | { kind: "unrecorded"; claims: JsonObject; check: LedgerCheck };

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
  const examined = await Promise.all(requests.map((request) => examine(request.token, request.audience, context)));
  const unrecorded = examined.filter((result) => result.kind === "unrecorded");
  const firsts =
    unrecorded.length === 0
      ? []
      : await context.ledger.recordChecks(
          unrecorded.map((result) => result.check),
          context.now,
        );
  let next = 0;
  return examined.map((result) =>
    result.kind === "decided" ? result.verification : concluded(result.claims, firsts[next++] === true, context.now),
  );
}

async function examine(token: string, audience: string | undefined, context: VerificationContext): Promise<Examined> {
  const { now } = context;
  const jws = parseCompact(token);
  if (jws === undefined) return decided(invalid("malformed"));
  if (jws.header.alg !== "ES256") return decided(invalid("unsupported_algorithm"));
  const kid = jws.header.kid;
  const publicKey = typeof kid === "string" ? await context.publishedKey(kid, now) : undefined;
  if (publicKey === undefined) return decided(invalid("unknown_key"));
  if (!(await verifyEs256(publicKey, jws.signingInput, jws.signature))) return decided(invalid("bad_signature"));

  const claims = jws.payload;
  if (claims.iss !== context.issuer) return decided(invalid("wrong_issuer", { claims }));
  const expiresAt = expiryOf(claims);
  if (typeof claims.request_id !== "string" || typeof claims.verified !== "boolean" || expiresAt === undefined)
    return decided(invalid("not_an_attestation", { claims }));
  if (expiresAt <= now.getTime()) return decided(invalid("expired", { claims, expiredAt: new Date(expiresAt) }));
  if (
    audience !== undefined &&
    (typeof claims.audience === "string" ? claims.audience : claims.organization_id) !== audience
  ) {
    return decided(invalid("audience_mismatch", { claims }));
  }

  // The payload, not the signature: ECDSA signatures are malleable, so one token has several valid ones.
  const tokenKey = createHash("sha256").update(jws.payloadSegment).digest();
  return { kind: "unrecorded", claims, check: { tokenKey, expiresAt: new Date(expiresAt) } };
}

function concluded(claims: JsonObject, first: boolean, now: Date): Verification {
  const replayed = !first;
  if (replayed && now >= replayRejectedFrom) return invalid("replayed", { claims, replayed });
  return { kind: "valid", claims, replayed };
}

/** Milliseconds since the epoch. Our tokens carry equal `exp` and `expires_at`; should they differ, the earlier counts. */
function expiryOf(claims: JsonObject): number | undefined {
  const seconds = [claims.exp, claims.expires_at].filter(
    (value): value is number => typeof value === "number" && Number.isFinite(value),
  );
  return seconds.length === 0 ? undefined : Math.min(...seconds) * 1000;
}

const decided = (verification: Verification): Examined => ({ kind: "decided", verification });

function invalid(
  reason: InvalidReason,
  details: { claims?: JsonObject; expiredAt?: Date; replayed?: boolean } = {},
): Verification {
  return { kind: "invalid", reason, ...details, replayed: details.replayed ?? false };
}
