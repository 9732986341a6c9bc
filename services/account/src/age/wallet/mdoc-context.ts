import {
  createHash,
  createPrivateKey,
  createPublicKey,
  type JsonWebKey,
  randomBytes,
  sign,
  verify,
  X509Certificate,
} from "node:crypto";
import type { MdocContext } from "@animo-id/mdoc";
import type { JWK } from "jose";

/** The digests ISO 18013-5 allows for value digests, as `node:crypto` names them. */
const digestNames = { "SHA-256": "sha256", "SHA-384": "sha384", "SHA-512": "sha512" } as const;

const p1363 = "ieee-p1363" as const;

/** A name field (`C`, `ST`, `CN`) of a certificate's subject, as node prints it one `KEY=value` a line. */
function subjectField(certificate: Uint8Array, field: string): string[] {
  return new X509Certificate(certificate).subject
    .split("\n")
    .filter((line) => line.startsWith(`${field}=`))
    .map((line) => line.slice(field.length + 1));
}

/**
 * What `@animo-id/mdoc` asks of its host, on `node:crypto`: digests, COSE_Sign1 with ES256 only (an
 * mdoc signed otherwise is refused before this is reached), and reading certificates. Chain validation
 * is ours (`mdoc-verifier.ts`, against the configured IACA roots and the injected clock), so the
 * library is never asked to do it. Device authentication by MAC is not offered: only signatures.
 */
export const mdocContext: MdocContext = {
  crypto: {
    random: (length) => randomBytes(length),
    digest: ({ digestAlgorithm, bytes }) => createHash(digestNames[digestAlgorithm]).update(bytes).digest(),
    calculateEphemeralMacKeyJwk: () => {
      throw new Error("device authentication by MAC is not accepted");
    },
  },
  cose: {
    sign1: {
      sign: ({ sign1, jwk }) =>
        sign("sha256", sign1.getRawSigningData().data, {
          key: createPrivateKey({ key: jwk as JsonWebKey, format: "jwk" }),
          dsaEncoding: p1363,
        }),
      verify: ({ sign1, jwk, options }) => {
        const { data, signature } = sign1.getRawVerificationData(options);
        try {
          const key = createPublicKey({ key: jwk as JsonWebKey, format: "jwk" });
          if (key.asymmetricKeyDetails?.namedCurve !== "prime256v1") return false;
          return verify("sha256", data, { key, dsaEncoding: p1363 }, signature);
        } catch {
          return false;
        }
      },
    },
    mac0: {
      sign: () => {
        throw new Error("device authentication by MAC is not offered");
      },
      verify: () => false,
    },
  },
  x509: {
    getIssuerNameField: ({ certificate, field }) => subjectField(certificate, field),
    getPublicKey: ({ certificate }) => new X509Certificate(certificate).publicKey.export({ format: "jwk" }) as JWK,
    validateCertificateChain: () => {
      throw new Error("the chain is validated by the verifier before the library runs");
    },
    getCertificateData: ({ certificate }) => {
      const parsed = new X509Certificate(certificate);
      return {
        issuerName: parsed.issuer,
        subjectName: parsed.subject,
        serialNumber: parsed.serialNumber,
        thumbprint: parsed.fingerprint256,
        notBefore: new Date(parsed.validFrom),
        notAfter: new Date(parsed.validTo),
        pem: parsed.toString(),
      };
    },
  },
};
