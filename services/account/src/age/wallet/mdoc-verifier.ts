import { createHash, X509Certificate } from "node:crypto";
import {
  cborEncode,
  DataItem,
  DeviceSignedDocument,
  parseDeviceResponse,
  type VerificationAssessment,
  Verifier,
} from "@animo-id/mdoc";
import { isBoundedCbor } from "./cbor-guard.ts";
import { mdocContext } from "./mdoc-context.ts";
import { InvalidStatusList, statusInCwt, statusListEntryOf } from "./mdoc-status.ts";
import type { TrustedIaca } from "./trust-list.ts";
import type { PresentationRefusal, Verification, VerifierDependencies } from "./verification.ts";

/** An mdoc document type whose `age_over_NN` elements prove an age here, and their namespace. */
export interface AgeDocType {
  docType: string;
  namespace: string;
}
/** The mDL (ISO 18013-5), whose namespace defines `age_over_NN`. */
export const mdl: AgeDocType = { docType: "org.iso.18013.5.1.mDL", namespace: "org.iso.18013.5.1" };
/** The EU age verification attestation (the EU's age verification blueprint): `age_over_NN` in its own namespace. */
export const euAgeVerification: AgeDocType = { docType: "eu.europa.ec.av.1", namespace: "eu.europa.ec.av.1" };
const ageElement = /^age_over_(\d{2})$/;
/** COSE algorithm -7: ES256, the only one taken for the issuer's and the device's signatures. */
const coseEs256 = -7;
const coseAlgorithmHeader = 1;
/** How far an issuer's clock may be ahead of or behind ours for its status list token (as for SD-JWT VC). */
const statusClockSkewSeconds = 60;

export interface MdocExpectations {
  /** The document type the answered query asked for: the only one taken. */
  type: AgeDocType;
  nonce: string;
  /** How the request reached the wallet, which decides the session transcript's handover. */
  handover: { kind: "redirect"; clientId: string; responseUri: string } | { kind: "dc_api"; origin: string };
  thresholds: readonly number[];
  now: Date;
}

/**
 * The SessionTranscript of OpenID4VP 1.0 Annex B.2.6.1, as the tagged CBOR the device signs within
 * DeviceAuthentication. For a request answered by `direct_post`: `[null, null, ["OpenID4VPHandover",
 * SHA-256(cbor([client_id, nonce, null, response_uri]))]]`; through the Digital Credentials API:
 * `[null, null, ["OpenID4VPDCAPIHandover", SHA-256(cbor([origin, nonce, null]))]]`, the origin not
 * prefixed. The null is the JWK thumbprint of a response encryption key, and responses here are not
 * encrypted. The two differ in name and content, so a response made for one never verifies as the other.
 */
function openId4VpSessionTranscript(expected: MdocExpectations) {
  const { handover } = expected;
  const [name, info] =
    handover.kind === "redirect"
      ? ["OpenID4VPHandover", [handover.clientId, expected.nonce, null, handover.responseUri]]
      : ["OpenID4VPDCAPIHandover", [handover.origin, expected.nonce, null]];
  return cborEncode(DataItem.fromData([null, null, [name, createHash("sha256").update(cborEncode(info)).digest()]]));
}

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

/** The library reports each check; the first that fails refuses for the reason of its kind. */
function refuseOnFailure(check: VerificationAssessment): void {
  if (check.status !== "FAILED") return;
  if (check.category === "DEVICE_AUTH") refuseWith("bad_device_signature");
  if (check.category === "DATA_INTEGRITY") refuseWith("tampered_disclosure");
  if (check.category === "ISSUER_AUTH" && check.check.includes("signature")) refuseWith("bad_issuer_signature");
  refuseWith("malformed_presentation");
}

const validAt = (certificate: X509Certificate, now: Date) =>
  new Date(certificate.validFrom) <= now && now <= new Date(certificate.validTo);

/** The configured IACA root that issued the document signer certificate, both valid on our clock. */
function trustedRoot(documentSigner: Uint8Array, roots: readonly TrustedIaca[], now: Date): TrustedIaca {
  let signer: X509Certificate;
  try {
    signer = new X509Certificate(documentSigner);
  } catch {
    return refuseWith("malformed_presentation");
  }
  const root = roots.find(
    ({ certificate }) =>
      certificate.ca &&
      signer.checkIssued(certificate) &&
      signer.verify(certificate.publicKey) &&
      validAt(certificate, now),
  );
  if (!root) return refuseWith("untrusted_issuer");
  if (!validAt(signer, now)) refuseWith("untrusted_issuer");
  return root;
}

/**
 * Verifies an ISO 18013-5 DeviceResponse (base64url, as OpenID4VP 1.0 carries `mso_mdoc`): one mDL,
 * its document signer issued by a trusted IACA root, the MSO valid on our clock, the issuer's and the
 * device's ES256 signatures (the device's over this request's session transcript), each disclosed
 * item's digest, nothing disclosed but asked `age_over_NN` elements, and the status list entry where
 * the MSO has one. Our checks come first so that each refusal names its cause; `@animo-id/mdoc` then
 * checks the signatures and digests; the status list is read last, only for an mdoc whose issuer
 * signature verified, so a forged MSO never makes us fetch its `uri`.
 */
export async function verifyMdocPresentation(
  deviceResponse: string,
  expected: MdocExpectations,
  roots: readonly TrustedIaca[],
  status: Pick<VerifierDependencies, "cwtStatusList" | "statusListSignedBy">,
): Promise<Verification> {
  try {
    return await verifyOrRefuse(deviceResponse, expected, roots, status);
  } catch (error) {
    if (error instanceof Refused) return { accepted: false, reason: error.reason };
    throw error;
  }
}

function parse(deviceResponse: string) {
  const bytes = Buffer.from(deviceResponse, "base64url");
  if (!isBoundedCbor(bytes)) return refuseWith("malformed_presentation");
  try {
    const parsed = parseDeviceResponse(bytes);
    const [document, ...others] = parsed.documents;
    if (!document || others.length > 0 || !(document instanceof DeviceSignedDocument) || parsed.status !== 0)
      return refuseWith("malformed_presentation");
    // Reading the MSO, the certificate and the device auth here makes a malformed one fail as such.
    const { issuerAuth } = document.issuerSigned;
    const mso = issuerAuth.decodedPayload;
    return { parsed, document, issuerAuth, mso, certificate: issuerAuth.certificate };
  } catch (error) {
    if (error instanceof Refused) throw error;
    return refuseWith("malformed_presentation");
  }
}

async function verifyOrRefuse(
  deviceResponse: string,
  expected: MdocExpectations,
  roots: readonly TrustedIaca[],
  status: Pick<VerifierDependencies, "cwtStatusList" | "statusListSignedBy">,
): Promise<Verification> {
  const { document, issuerAuth, mso, certificate } = parse(deviceResponse);
  if (document.docType !== expected.type.docType || mso.docType !== expected.type.docType)
    refuseWith("credential_type_not_accepted");
  const deviceSignature = document.deviceSigned.deviceAuth.deviceSignature;
  if (issuerAuth.protectedHeaders.get(coseAlgorithmHeader) !== coseEs256) refuseWith("unsupported_algorithm");
  if (deviceSignature?.protectedHeaders.get(coseAlgorithmHeader) !== coseEs256) refuseWith("unsupported_algorithm");
  const root = trustedRoot(certificate, roots, expected.now);

  const { validFrom, validUntil } = mso.validityInfo ?? {};
  if (!(validFrom instanceof Date) || !(validUntil instanceof Date)) return refuseWith("malformed_presentation");
  if (validUntil <= expected.now) refuseWith("expired_credential");
  if (validFrom > expected.now) refuseWith("credential_not_yet_valid");
  const statusEntry = statusListEntryOf((mso as { status?: unknown }).status);
  if (statusEntry === null) refuseWith("malformed_presentation");

  const disclosed = disclosedAges(document, expected.type.namespace, expected.thresholds);

  const verifier = new Verifier();
  await verifier.verifyIssuerSignature(
    {
      issuerAuth,
      trustedCertificates: [new Uint8Array(root.certificate.raw)],
      // Done above against the configured roots, on our clock.
      disableCertificateChainValidation: true,
      now: expected.now,
      onCheckG: refuseOnFailure,
    },
    mdocContext,
  );
  await verifier.verifyDeviceSignature(
    { deviceSigned: document, sessionTranscriptBytes: openId4VpSessionTranscript(expected), onCheckG: refuseOnFailure },
    mdocContext,
  );
  await verifier.verifyData({ mdoc: document, onCheckG: refuseOnFailure }, mdocContext);
  if (statusEntry) await checkStatus(statusEntry, root, expected.now, status);

  return { accepted: true, issuer: root.issuer, disclosed, validUntil };
}

/** Refuses a revoked or suspended mdoc (any status but 0, VALID), and one whose list is unusable. */
async function checkStatus(
  entry: { idx: number; uri: string },
  root: TrustedIaca,
  now: Date,
  deps: Pick<VerifierDependencies, "cwtStatusList" | "statusListSignedBy">,
): Promise<void> {
  const token = await deps.cwtStatusList(entry.uri).catch(() => refuseWith("status_unavailable"));
  let value: number;
  try {
    value = statusInCwt(token, {
      entry,
      root: root.certificate,
      now,
      skewSeconds: statusClockSkewSeconds,
      signedBy: (verify) =>
        deps.statusListSignedBy(Buffer.from(token).toString("base64url"), root.certificate.fingerprint256, verify),
    });
  } catch (error) {
    if (error instanceof InvalidStatusList) return refuseWith("status_unavailable");
    throw error;
  }
  if (value !== 0) refuseWith("revoked_credential");
}

/**
 * The age elements the holder disclosed: only issuer-signed `age_over_NN` of the mDL namespace, each
 * an asked threshold with a boolean, each once, at least one, and nothing signed by the device alone.
 */
function disclosedAges(document: DeviceSignedDocument, ageNamespace: string, asked: readonly number[]) {
  if (document.deviceSigned.nameSpaces.size > 0) refuseWith("claim_not_asked");
  const disclosed = new Map<number, boolean>();
  for (const [namespace, items] of document.issuerSigned.nameSpaces) {
    if (namespace !== ageNamespace) refuseWith("claim_not_asked");
    for (const item of items) {
      const threshold = Number(ageElement.exec(item.elementIdentifier)?.[1]);
      if (!asked.includes(threshold) || typeof item.elementValue !== "boolean") refuseWith("claim_not_asked");
      if (disclosed.has(threshold)) refuseWith("duplicate_disclosure");
      disclosed.set(threshold, item.elementValue as boolean);
    }
  }
  if (disclosed.size === 0) refuseWith("claim_missing");
  return disclosed;
}
