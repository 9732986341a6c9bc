import { create, type JsonObject } from "@bufbuild/protobuf";
import { type Timestamp, timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, type ConnectRouter, type ServiceImpl } from "@connectrpc/connect";
import { type Clock, refusalTranslator } from "@svc/platform";
import {
  GetKeySetResponseSchema,
  KeyInfoSchema,
  AgeResult as ProtoAgeResult,
  KeyState as ProtoKeyState,
  ProofVerdict as ProtoProofVerdict,
  PublicJwkSchema,
  RecordTokenChecksResponseSchema,
  RotateKeysResponseSchema,
  type SignAttestationRequest,
  SignAttestationResponseSchema,
  SigningService,
  type SignProofRequest,
  SignProofResponseSchema,
  type TokenCheck,
  VerifyTokenResponseSchema,
  VerifyTokensResponseSchema,
} from "@svc/proto/signing/v1/signing_pb.js";
import { type AgeResult, type AttestationInput, signAttestation } from "./attestation-token.ts";
import { invalidInput, type SigningRefusalKind } from "./invalid-input.ts";
import { type KeyRing, type RingKey, SigningKeyUnavailableError } from "./key-ring.ts";
import type { AddedKey } from "./key-rotation.ts";
import { type ProofInput, type ProofVerdict, signProof } from "./proof-token.ts";
import { type LedgerCheck, type ReplayLedger, ReplayLedgerUnavailableError } from "./replay-ledger.ts";
import { keyState } from "./rotation-schedule.ts";
import {
  type Verification,
  type VerificationContext,
  verifyAttestation,
  verifyAttestations,
} from "./token-verification.ts";

/** Bounds one VerifyTokens or RecordTokenChecks call: its ledger write is a single statement of at most this many rows. */
const verifyTokensLimit = 256;

export interface SigningRouteDependencies {
  clock: Clock;
  issuer: string;
  ring: KeyRing;
  ledger: ReplayLedger;
  rotate(): Promise<AddedKey>;
}

/** Thin Connect handlers: they translate messages and errors; the rules live in the domain modules. */
export function signingRoutes(deps: SigningRouteDependencies): (router: ConnectRouter) => void {
  const { clock, issuer, ring } = deps;
  const verificationContext = (): VerificationContext => ({
    issuer,
    now: clock.now(),
    publishedKey: (kid, at) => ring.publishedKey(kid, at),
    ledger: deps.ledger,
  });
  const implementation: ServiceImpl<typeof SigningService> = {
    signAttestation: (request) =>
      translateErrors(() => {
        const now = clock.now();
        const signed = signAttestation(attestationInput(request), ring.signer(now), { issuer, now });
        return create(SignAttestationResponseSchema, {
          token: signed.token,
          kid: signed.kid,
          issuedAt: timestampFromDate(signed.issuedAt),
          expiresAt: timestampFromDate(signed.expiresAt),
        });
      }),

    signProof: (request) =>
      translateErrors(() => {
        const signed = signProof(proofInput(request), ring.signer(clock.now()), issuer);
        return create(SignProofResponseSchema, signed);
      }),

    getKeySet: async () => {
      const keys = await ring.publishedFresh(clock.now());
      return create(GetKeySetResponseSchema, {
        keys: keys.map((key) =>
          create(PublicJwkSchema, {
            kid: key.kid,
            kty: "EC",
            crv: "P-256",
            x: key.x,
            y: key.y,
            alg: "ES256",
            use: "sig",
            ...(key.window.unpublishAt !== null && { unpublishAt: timestampFromDate(key.window.unpublishAt) }),
          }),
        ),
        issuer,
      });
    },

    verifyToken: (request) =>
      translateErrors(async () => {
        const result = await verifyAttestation(request.token, request.audience, verificationContext());
        return verificationResponse(result);
      }),

    verifyTokens: (request) =>
      translateErrors(async () => {
        if (request.requests.length > verifyTokensLimit)
          throw invalidInput(`at most ${verifyTokensLimit} tokens per call, not ${request.requests.length}`);
        const results = await verifyAttestations(request.requests, verificationContext());
        return create(VerifyTokensResponseSchema, { responses: results.map(verificationResponse) });
      }),

    recordTokenChecks: (request) =>
      translateErrors(async () => {
        if (request.checks.length > verifyTokensLimit)
          throw invalidInput(`at most ${verifyTokensLimit} checks per call, not ${request.checks.length}`);
        const first = await deps.ledger.recordChecks(request.checks.map(ledgerCheck), clock.now());
        return create(RecordTokenChecksResponseSchema, { first });
      }),

    rotateKeys: async () => {
      const added = await deps.rotate();
      await ring.refresh();
      const now = clock.now();
      return create(RotateKeysResponseSchema, {
        kid: added.kid,
        signsFrom: timestampFromDate(added.window.signsFrom),
        keys: ring.published(now).map((key) => keyInfo(key, now)),
      });
    },
  };
  return (router) => router.service(SigningService, implementation);
}

const refusalsAsConnectErrors = refusalTranslator<SigningRefusalKind>({ invalid_argument: Code.InvalidArgument });

async function translateErrors<T>(work: () => T | Promise<T>): Promise<T> {
  try {
    return await refusalsAsConnectErrors(async () => work());
  } catch (error) {
    // Not refusals: the request is fine, but the service cannot answer it now.
    if (error instanceof SigningKeyUnavailableError || error instanceof ReplayLedgerUnavailableError)
      throw new ConnectError(error.message, Code.Unavailable);
    throw error;
  }
}

const ageResults = new Map<ProtoAgeResult, AgeResult | undefined>([
  [ProtoAgeResult.UNSPECIFIED, undefined],
  [ProtoAgeResult.OVER, "over"],
  [ProtoAgeResult.UNDER, "under"],
  [ProtoAgeResult.UNAVAILABLE, "unavailable"],
]);

function attestationInput(request: SignAttestationRequest): AttestationInput {
  if (!ageResults.has(request.ageResult)) throw invalidInput(`age_result ${request.ageResult} is not known`);
  return {
    requestId: request.requestId,
    verified: request.verified,
    organizationId: request.organizationId,
    audience: request.audience,
    verifiedAt: instant(request.verifiedAt),
    age: ageResults.get(request.ageResult),
    trusted: request.trusted,
    trustedSince: instant(request.trustedSince),
    lastPassAt: instant(request.lastPassAt),
  };
}

const verdicts = new Map<ProtoProofVerdict, ProofVerdict>([
  [ProtoProofVerdict.APPROVE, "approve"],
  [ProtoProofVerdict.DENIED, "denied"],
]);

function proofInput(request: SignProofRequest): ProofInput {
  return {
    requestId: request.requestId,
    verdict: verdicts.get(request.verdict),
    ceremonyId: request.ceremonyId,
    cardId: request.cardId,
    agentId: request.agentId,
    subject: request.subject,
    cardDigest: request.cardDigest,
    amr: request.amr,
    signedAt: instant(request.signedAt),
    quorum: request.quorum && { approve: request.quorum.approve, deny: request.quorum.deny },
    decisions: request.decisions.map((decision) => ({
      subject: decision.subject,
      verdict: verdicts.get(decision.verdict),
      ceremonyId: decision.ceremonyId,
      signedAt: instant(decision.signedAt),
      amr: decision.amr,
    })),
  };
}

/** A check recorded for a caller that verified the token itself: only its digest and expiry reach the ledger. */
function ledgerCheck(check: TokenCheck): LedgerCheck {
  if (check.payloadHash.length !== 32) throw invalidInput("payload_hash must be the 32 bytes of a SHA-256 digest");
  if (check.expiresAt === undefined) throw invalidInput("expires_at is required");
  return { tokenKey: Buffer.from(check.payloadHash), expiresAt: timestampDate(check.expiresAt) };
}

function verificationResponse(result: Verification) {
  return create(VerifyTokenResponseSchema, {
    valid: result.kind === "valid",
    reason: result.kind === "invalid" ? result.reason : "",
    replayed: result.replayed,
    // Claims come from JSON.parse of the payload: a JSON object, as protobuf's Struct takes it.
    ...(result.claims !== undefined && { claims: result.claims as JsonObject }),
    ...(result.kind === "invalid" &&
      result.expiredAt !== undefined && { expiredAt: timestampFromDate(result.expiredAt) }),
  });
}

const instant = (timestamp: Timestamp | undefined): Date | undefined =>
  timestamp === undefined ? undefined : timestampDate(timestamp);

const keyStates = {
  pending: ProtoKeyState.PENDING,
  active: ProtoKeyState.ACTIVE,
  retired: ProtoKeyState.RETIRED,
  unpublished: ProtoKeyState.UNSPECIFIED,
};

function keyInfo(key: RingKey, now: Date) {
  const { publishedAt, signsFrom, retiredAt, unpublishAt } = key.window;
  return create(KeyInfoSchema, {
    kid: key.kid,
    state: keyStates[keyState(key.window, now)],
    publishedAt: timestampFromDate(publishedAt),
    signsFrom: timestampFromDate(signsFrom),
    ...(retiredAt !== null && { retiredAt: timestampFromDate(retiredAt) }),
    ...(unpublishAt !== null && { unpublishAt: timestampFromDate(unpublishAt) }),
  });
}
