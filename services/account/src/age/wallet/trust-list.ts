import { X509Certificate } from "node:crypto";

/** An issuer of age credentials this deployment trusts: its identifier (`iss`) and its public keys (JWK). */
export interface TrustedIssuer {
  iss: string;
  keys: unknown[];
}

/**
 * `ACCOUNT_WALLET_ISSUERS`: a JSON array of `{"iss": "https://…", "jwks": {"keys": [JWK, …]}}`, the
 * issuers whose SD-JWT VCs prove an age here. Parsed at start, so a bad list stops the service.
 */
export function parseTrustList(raw: string): TrustedIssuer[] {
  const list: unknown = JSON.parse(raw);
  if (!Array.isArray(list)) throw new Error("must be a JSON array of {iss, jwks}");
  return list.map((entry, index) => {
    const { iss, jwks } = (entry ?? {}) as { iss?: unknown; jwks?: { keys?: unknown } };
    if (typeof iss !== "string" || iss === "") throw new Error(`entry ${index}: iss must be a non-empty string`);
    if (!Array.isArray(jwks?.keys) || jwks.keys.length === 0)
      throw new Error(`entry ${index}: jwks.keys must be a non-empty array of JWKs`);
    return { iss, keys: jwks.keys };
  });
}

/** `ACCOUNT_VERIFIER_CERTIFICATE`: one PEM certificate (line breaks may be written `\n`), as DER. */
export function parseCertificatePem(raw: string): Buffer {
  try {
    return Buffer.from(new X509Certificate(raw.replaceAll("\\n", "\n")).raw);
  } catch {
    throw new Error("not a PEM certificate");
  }
}

/** An IACA root certificate this deployment trusts for mdocs, and the issuer name kept with a verdict. */
export interface TrustedIaca {
  issuer: string;
  certificate: X509Certificate;
}

/**
 * `ACCOUNT_WALLET_IACA_ROOTS`: a JSON array of `{"issuer": "…", "certificates": ["-----BEGIN
 * CERTIFICATE-----…", …]}`, the IACA roots (ISO 18013-5) whose document signers' mdocs prove an age
 * here. Each must be a CA certificate. Parsed at start, so a bad list stops the service.
 */
export function parseIacaTrustList(raw: string): TrustedIaca[] {
  const list: unknown = JSON.parse(raw);
  if (!Array.isArray(list)) throw new Error("must be a JSON array of {issuer, certificates}");
  return list.flatMap((entry, index) => {
    const { issuer, certificates } = (entry ?? {}) as { issuer?: unknown; certificates?: unknown };
    if (typeof issuer !== "string" || issuer === "")
      throw new Error(`entry ${index}: issuer must be a non-empty string`);
    if (!Array.isArray(certificates) || certificates.length === 0)
      throw new Error(`entry ${index}: certificates must be a non-empty array of PEM certificates`);
    return certificates.map((pem) => {
      let certificate: X509Certificate;
      try {
        certificate = new X509Certificate(String(pem));
      } catch {
        throw new Error(`entry ${index}: not a PEM certificate`);
      }
      if (!certificate.ca)
        throw new Error(`entry ${index}: ${certificate.subject.replaceAll("\n", ", ")} is not a CA certificate`);
      return { issuer, certificate };
    });
  });
}
