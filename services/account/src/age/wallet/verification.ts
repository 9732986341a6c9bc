import type { TrustedIssuer } from "./trust-list.ts";

/** Why a presentation was refused; each names one failed check, for the person's page and the tests. */
export type PresentationRefusal =
  | "malformed_presentation"
  | "unsupported_algorithm"
  | "untrusted_issuer"
  | "bad_issuer_signature"
  | "credential_type_not_accepted"
  | "expired_credential"
  | "credential_not_yet_valid"
  | "revoked_credential"
  | "status_unavailable"
  | "duplicate_disclosure"
  | "tampered_disclosure"
  | "missing_key_binding"
  | "wrong_nonce"
  | "wrong_audience"
  | "stale_key_binding"
  | "holder_key_mismatch"
  | "bad_device_signature"
  | "key_binding_mismatch"
  | "claim_not_asked"
  | "claim_missing";

/** What both verifiers (SD-JWT VC and mdoc) read beyond the presentation: trust and status lists. */
export interface VerifierDependencies {
  trustedIssuer(iss: string): TrustedIssuer | undefined;
  /** The status list token (JWT) at an SD-JWT VC's `status.status_list.uri`. */
  statusList(uri: string): Promise<string>;
  /** The status list token (CWT, CBOR bytes) at an mdoc MSO's `status.status_list.uri`. */
  cwtStatusList(uri: string): Promise<Uint8Array>;
  /**
   * Whether a status list token (a JWT, or a CWT as base64url) is signed by `signer` (an SD-JWT VC
   * issuer, or the fingerprint of an mdoc's IACA root): `verify` runs once for each token held and
   * signer, as a list answers for many credentials.
   */
  statusListSignedBy(token: string, signer: string, verify: () => boolean): boolean;
}

/** A verifier's answer: what an accepted presentation disclosed, or the one check it failed. */
export type Verification =
  | { accepted: true; issuer: string; disclosed: Map<number, boolean>; validUntil: Date }
  | { accepted: false; reason: PresentationRefusal };
