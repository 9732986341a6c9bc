// @peculiar/x509 resolves its parts through tsyringe, which needs the Reflect metadata API first.
import "reflect-metadata";
import { createPrivateKey, webcrypto } from "node:crypto";
import * as x509 from "@peculiar/x509";

export interface TlsCertificate {
  /** PKCS #8 PEM. */
  key: string;
  /** The certificate, PEM: a server presents it, and a client that is to trust it adds it as a CA. */
  cert: string;
}

const ecdsa = { name: "ECDSA", namedCurve: "P-256", hash: "SHA-256" } as const;

/**
 * A self-signed P-256 certificate for a loopback server, valid for `ips` from an hour ago for a day (real time:
 * TLS checks the machine's clock, never a test's), made for each run so no key is kept in the repository.
 */
export async function selfSignedCertificate(ips: readonly string[] = ["127.0.0.1"]): Promise<TlsCertificate> {
  x509.cryptoProvider.set(webcrypto as unknown as Crypto);
  const keys = (await webcrypto.subtle.generateKey(ecdsa, true, ["sign", "verify"])) as CryptoKeyPair;
  const now = Date.now();
  const certificate = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: "01",
    name: "CN=svc test push service",
    notBefore: new Date(now - 3_600_000),
    notAfter: new Date(now + 86_400_000),
    signingAlgorithm: ecdsa,
    keys,
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.SubjectAlternativeNameExtension(ips.map((ip) => ({ type: "ip" as const, value: ip }))),
    ],
  });
  const pkcs8 = Buffer.from(await webcrypto.subtle.exportKey("pkcs8", keys.privateKey));
  return {
    key: createPrivateKey({ key: pkcs8, format: "der", type: "pkcs8" }).export({
      format: "pem",
      type: "pkcs8",
    }) as string,
    cert: certificate.toString("pem"),
  };
}
