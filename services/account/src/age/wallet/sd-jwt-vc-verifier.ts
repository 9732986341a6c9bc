import { digest } from "@sd-jwt/crypto-nodejs";
import { SDJwtVcInstance } from "@sd-jwt/sd-jwt-vc";
import { es256, verifyEs256 } from "./es256.ts";
import { credentialQueryId } from "./presentation-request.ts";
import type { PresentationRefusal, Verification, VerifierDependencies } from "./verification.ts";

export interface PresentationExpectations {
  nonce: string;
  /**
   * The KB-JWT's `aud`: the verifier's client_id for `direct_post`, or `origin:<origin>` for a
   * response through the Digital Credentials API (OpenID4VP 1.0 Appendix A.4, also for signed requests).
   */
  audience: string;
  thresholds: readonly number[];
  credentialTypes: readonly string[];
  now: Date;
}

/** A KB-JWT's `iat` may be this far from our clock either way. */
const keyBindingFreshnessSeconds = 300;
/** How far an issuer's clock may be ahead of or behind ours for its status list token. */
const statusClockSkewSeconds = 60;
const maxDisclosures = 64;

class Refused extends Error {
  readonly reason: PresentationRefusal;
  constructor(reason: PresentationRefusal) {
    super(reason);
    this.reason = reason;
  }
}
const refuseWith = (reason: PresentationRefusal): never => {
  throw new Refused(reason);
};

function decodeSegment(segment: string | undefined): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(Buffer.from(segment ?? "", "base64url").toString("utf8"));
    if (typeof value === "object" && value !== null && !Array.isArray(value)) return value as Record<string, unknown>;
  } catch {}
  return refuseWith("malformed_presentation");
}

function compactJwt(jwt: string) {
  const parts = jwt.split(".");
  if (parts.length !== 3) refuseWith("malformed_presentation");
  return { header: decodeSegment(parts[0]), payload: decodeSegment(parts[1]) };
}

/** The one SD-JWT presentation under the DCQL credential id in an OpenID4VP 1.0 `vp_token`. */
function presentationOf(vpToken: string): string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(vpToken);
  } catch {
    return refuseWith("malformed_presentation");
  }
  const answer = (parsed as Record<string, unknown> | null)?.[credentialQueryId];
  if (!Array.isArray(answer) || answer.length !== 1 || typeof answer[0] !== "string")
    return refuseWith("malformed_presentation");
  return answer[0];
}

/** Every digest the issuer signed, in the payload and inside disclosed values (nested `_sd`). */
function signedDigests(value: unknown, into: Set<string>): Set<string> {
  if (Array.isArray(value)) {
    for (const item of value) signedDigests(item, into);
    return into;
  }
  if (typeof value !== "object" || value === null) return into;
  for (const [key, inner] of Object.entries(value)) {
    if (key !== "_sd") signedDigests(inner, into);
    else if (Array.isArray(inner)) for (const d of inner) if (typeof d === "string") into.add(d);
  }
  return into;
}

const b64urlSha256 = (text: string) => Buffer.from(digest(text, "sha-256")).toString("base64url");

/**
 * Verifies an SD-JWT VC presentation with its KB-JWT. Our own checks come first, so each refusal
 * names its cause (`@sd-jwt` would throw one generic error for several); the library then checks the
 * issuer signature, every digest, the KB-JWT's signature, nonce and `sd_hash`, validity and status.
 */
export async function verifySdJwtVcPresentation(
  vpToken: string,
  expected: PresentationExpectations,
  deps: VerifierDependencies,
): Promise<Verification> {
  try {
    return await verifyOrRefuse(vpToken, expected, deps);
  } catch (error) {
    if (error instanceof Refused) return { accepted: false, reason: error.reason };
    throw error;
  }
}

async function verifyOrRefuse(
  vpToken: string,
  expected: PresentationExpectations,
  deps: VerifierDependencies,
): Promise<Verification> {
  const presentation = presentationOf(vpToken);
  const parts = presentation.split("~");
  const [issuerJwt = "", ...rest] = parts;
  const keyBindingJwt = rest.pop() ?? "";
  const disclosures = rest;
  if (parts.length < 2 || disclosures.length > maxDisclosures) refuseWith("malformed_presentation");

  const credential = compactJwt(issuerJwt);
  if (credential.header.alg !== es256) refuseWith("unsupported_algorithm");
  if (credential.header.typ !== "dc+sd-jwt" && credential.header.typ !== "vc+sd-jwt")
    refuseWith("malformed_presentation");
  const iss = credential.payload.iss;
  const trusted = typeof iss === "string" ? deps.trustedIssuer(iss) : undefined;
  if (!trusted) return refuseWith("untrusted_issuer");
  const issuerKeys = trusted.keys;
  const [issuerInput = ""] = [issuerJwt.slice(0, issuerJwt.lastIndexOf("."))];
  const issuerSignature = issuerJwt.slice(issuerJwt.lastIndexOf(".") + 1);
  if (!issuerKeys.some((jwk) => verifyEs256(jwk, issuerInput, issuerSignature))) refuseWith("bad_issuer_signature");
  // What was verified above is not verified again when the library asks for the same bytes.
  const verifiedHere = new Set([`${issuerInput}.${issuerSignature}`]);
  if (!expected.credentialTypes.includes(String(credential.payload.vct))) refuseWith("credential_type_not_accepted");

  const nowSeconds = Math.floor(expected.now.getTime() / 1000);
  const exp = credential.payload.exp;
  if (typeof exp !== "number") return refuseWith("malformed_presentation");
  if (exp <= nowSeconds) refuseWith("expired_credential");
  const nbf = credential.payload.nbf;
  if (typeof nbf === "number" && nbf > nowSeconds) refuseWith("credential_not_yet_valid");

  if (new Set(disclosures).size !== disclosures.length) refuseWith("duplicate_disclosure");
  if (credential.payload._sd_alg !== undefined && credential.payload._sd_alg !== "sha-256")
    refuseWith("unsupported_algorithm");
  const disclosedValues = disclosures.map((d) => {
    try {
      return JSON.parse(Buffer.from(d, "base64url").toString("utf8")) as unknown;
    } catch {
      return refuseWith("tampered_disclosure");
    }
  });
  const digests = signedDigests([credential.payload, ...disclosedValues], new Set());
  if (disclosures.some((d) => !digests.has(b64urlSha256(d)))) refuseWith("tampered_disclosure");

  if (keyBindingJwt === "") refuseWith("missing_key_binding");
  const binding = compactJwt(keyBindingJwt);
  if (binding.header.alg !== es256) refuseWith("unsupported_algorithm");
  if (binding.header.typ !== "kb+jwt") refuseWith("malformed_presentation");
  if (binding.payload.nonce !== expected.nonce) refuseWith("wrong_nonce");
  if (binding.payload.aud !== expected.audience) refuseWith("wrong_audience");
  const iat = binding.payload.iat;
  if (typeof iat !== "number" || Math.abs(iat - nowSeconds) > keyBindingFreshnessSeconds)
    refuseWith("stale_key_binding");
  const holderJwk = (credential.payload.cnf as { jwk?: unknown } | undefined)?.jwk;
  const bindingInput = keyBindingJwt.slice(0, keyBindingJwt.lastIndexOf("."));
  const bindingSignature = keyBindingJwt.slice(keyBindingJwt.lastIndexOf(".") + 1);
  if (holderJwk === undefined || !verifyEs256(holderJwk, bindingInput, bindingSignature))
    refuseWith("holder_key_mismatch");
  verifiedHere.add(`${bindingInput}.${bindingSignature}`);

  let revoked = false;
  let statusListToken: string | undefined;
  const library = new SDJwtVcInstance({
    hasher: digest,
    verifier: async (data: string, signature: string) => {
      if (verifiedHere.has(`${data}.${signature}`)) return true;
      const verify = () => issuerKeys.some((jwk) => verifyEs256(jwk, data, signature));
      const jws = `${data}.${signature}`;
      return jws === statusListToken ? deps.statusListSignedBy(jws, trusted.iss, verify) : verify();
    },
    kbVerifier: async (data: string, signature: string) =>
      verifiedHere.has(`${data}.${signature}`) || verifyEs256(holderJwk, data, signature),
    statusListFetcher: async (uri: string) => {
      statusListToken = await deps.statusList(uri).catch(() => refuseWith("status_unavailable"));
      return statusListToken;
    },
    statusValidator: async (status: number) => {
      if (status !== 0) {
        revoked = true;
        throw new Error("the credential's status is not valid");
      }
    },
  });
  let claims: Record<string, unknown>;
  try {
    // The library checks iat, nbf and exp of the credential and of its status list token. The credential's
    // exp and nbf were checked exactly above; a status list token is signed on its issuer's clock, which can
    // be a second or more ahead of ours (the development list is signed at a fresh now, across a second
    // boundary from `nowSeconds`), so those checks allow a minute of skew.
    const verified = await library.verify(presentation, {
      currentDate: nowSeconds,
      keyBindingNonce: expected.nonce,
      skewSeconds: statusClockSkewSeconds,
    });
    claims = verified.payload as Record<string, unknown>;
  } catch (error) {
    if (error instanceof Refused) throw error;
    if (revoked) return refuseWith("revoked_credential");
    if (String((error as Error).message).includes("sd_hash")) return refuseWith("key_binding_mismatch");
    if (String((error as Error).message).startsWith("Status List")) return refuseWith("status_unavailable");
    return refuseWith("bad_issuer_signature");
  }

  return {
    accepted: true,
    issuer: trusted.iss,
    disclosed: disclosedAges(claims, disclosedValues, expected.thresholds),
    validUntil: new Date(exp * 1000),
  };
}

/**
 * The age claims the holder disclosed: each must be an asked `age_equal_or_over.N` with a boolean, at
 * least one must be there, and no other claim may be disclosed.
 */
function disclosedAges(
  claims: Record<string, unknown>,
  disclosures: unknown[],
  asked: readonly number[],
): Map<number, boolean> {
  const ages = (claims.age_equal_or_over ?? {}) as Record<string, unknown>;
  const disclosed = new Map<number, boolean>();
  for (const disclosure of disclosures) {
    // [salt, name, value] for an object property: only names of age_equal_or_over are asked for.
    const name = Array.isArray(disclosure) && disclosure.length === 3 ? String(disclosure[1]) : undefined;
    const threshold = Number(name);
    if (name === undefined || !/^\d{1,3}$/.test(name) || !asked.includes(threshold)) refuseWith("claim_not_asked");
    const value = ages[name as string];
    if (typeof value !== "boolean") return refuseWith("claim_not_asked");
    disclosed.set(threshold, value);
  }
  if (disclosed.size === 0) refuseWith("claim_missing");
  return disclosed;
}
