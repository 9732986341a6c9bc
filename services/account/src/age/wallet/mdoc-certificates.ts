import { type KeyObject, sign } from "node:crypto";
import { AsnConvert, OctetString } from "@peculiar/asn1-schema";
import {
  AlgorithmIdentifier,
  AttributeTypeAndValue,
  AttributeValue,
  BasicConstraints,
  Certificate,
  ExtendedKeyUsage,
  Extension,
  Extensions,
  id_ce_basicConstraints,
  id_ce_extKeyUsage,
  id_ce_keyUsage,
  KeyUsage,
  KeyUsageFlags,
  Name,
  RelativeDistinguishedName,
  SubjectPublicKeyInfo,
  TBSCertificate,
  Validity,
  Version,
} from "@peculiar/asn1-x509";

const ecdsaWithSha256 = "1.2.840.10045.4.3.2";
const countryName = "2.5.4.6";
const commonName = "2.5.4.3";
/** ISO 18013-5 Annex B: the extended key usage of an mdoc document signer certificate. */
const mdlDocumentSigner = "1.0.18013.5.1.2";

export interface CertificateName {
  country: string;
  commonName: string;
}

function name(of: CertificateName): Name {
  return new Name([
    new RelativeDistinguishedName([
      new AttributeTypeAndValue({ type: countryName, value: new AttributeValue({ printableString: of.country }) }),
    ]),
    new RelativeDistinguishedName([
      new AttributeTypeAndValue({ type: commonName, value: new AttributeValue({ utf8String: of.commonName }) }),
    ]),
  ]);
}

const extension = (extnID: string, value: unknown) =>
  new Extension({ extnID, critical: true, extnValue: new OctetString(AsnConvert.serialize(value)) });

/**
 * A DER X.509 certificate signed ECDSA P-256 with SHA-256: an IACA root (a CA that signs document
 * signers) or a document signer or status list signer issued by one; or the development verifier's
 * self-signed certificate (its request objects' x5c). Only the development and untrusted mdoc issuers make
 * these; a real issuer's IACA root comes from configuration.
 */
export function issueCertificate(input: {
  serial: number;
  subject: CertificateName;
  issuer: CertificateName;
  publicKey: KeyObject;
  signingKey: KeyObject;
  role: "iaca" | "document-signer" | "status-list-signer" | "verifier";
  notBefore: Date;
  notAfter: Date;
}): Buffer {
  const algorithm = new AlgorithmIdentifier({ algorithm: ecdsaWithSha256 });
  const extensions =
    input.role === "iaca"
      ? [
          extension(id_ce_basicConstraints, new BasicConstraints({ cA: true, pathLenConstraint: 0 })),
          extension(id_ce_keyUsage, new KeyUsage(KeyUsageFlags.keyCertSign | KeyUsageFlags.cRLSign)),
        ]
      : input.role === "document-signer"
        ? [
            extension(id_ce_keyUsage, new KeyUsage(KeyUsageFlags.digitalSignature)),
            extension(id_ce_extKeyUsage, new ExtendedKeyUsage([mdlDocumentSigner])),
          ]
        : [extension(id_ce_keyUsage, new KeyUsage(KeyUsageFlags.digitalSignature))];
  const tbsCertificate = new TBSCertificate({
    version: Version.v3,
    serialNumber: new Uint8Array([input.serial]).buffer,
    signature: algorithm,
    issuer: name(input.issuer),
    validity: new Validity({ notBefore: input.notBefore, notAfter: input.notAfter }),
    subject: name(input.subject),
    subjectPublicKeyInfo: AsnConvert.parse(
      input.publicKey.export({ type: "spki", format: "der" }),
      SubjectPublicKeyInfo,
    ),
    extensions: new Extensions(extensions),
  });
  const signature = sign("sha256", Buffer.from(AsnConvert.serialize(tbsCertificate)), input.signingKey);
  const certificate = new Certificate({
    tbsCertificate,
    signatureAlgorithm: algorithm,
    signatureValue: new Uint8Array(signature).buffer,
  });
  return Buffer.from(AsnConvert.serialize(certificate));
}
