import { createHash, createPublicKey, type KeyObject, X509Certificate } from "node:crypto";
import { Document, MDoc } from "@animo-id/mdoc";
import type { JWK } from "jose";
import { ageVerdictAt } from "../age-evaluation.ts";
import { keyPairFromSeed } from "./es256.ts";
import { type CertificateName, issueCertificate } from "./mdoc-certificates.ts";
import { mdocContext } from "./mdoc-context.ts";
import { mdlDocType, mdlNamespace } from "./mdoc-verifier.ts";
import { euPidThresholds } from "./presentation-request.ts";
import type { TrustedIaca } from "./trust-list.ts";

/** Fixed and wide, so that tests moving their clock years either way still meet valid certificates. */
const certificatesFrom = new Date("2000-01-01T00:00:00Z");
const certificatesUntil = new Date("2100-01-01T00:00:00Z");
const mdocLifetimeMs = 365 * 86_400_000;

/**
 * An mdoc issuer of the development wallet: an IACA root and the document signer it certifies, both
 * P-256 keys derived from `seed`. It issues mDLs whose only elements are the `age_over_NN` of the EU
 * PID thresholds, bound to the holder's device key.
 */
export class DevMdocIssuer {
  readonly #documentSignerKey: KeyObject;
  readonly #documentSigner: Buffer;
  readonly #root: X509Certificate;
  readonly #issuer: string;

  constructor(issuer: string, seed: Buffer, names: { root: CertificateName; documentSigner: CertificateName }) {
    const derived = (label: string) => keyPairFromSeed(createHash("sha256").update(label).update(seed).digest());
    const root = derived("mdoc iaca root");
    const signer = derived("mdoc document signer");
    const rootPublic = createPublicKey(root.privateKey);
    this.#root = new X509Certificate(
      issueCertificate({
        serial: 1,
        subject: names.root,
        issuer: names.root,
        publicKey: rootPublic,
        signingKey: root.privateKey,
        role: "iaca",
        notBefore: certificatesFrom,
        notAfter: certificatesUntil,
      }),
    );
    this.#documentSigner = issueCertificate({
      serial: 2,
      subject: names.documentSigner,
      issuer: names.root,
      publicKey: createPublicKey(signer.privateKey),
      signingKey: root.privateKey,
      role: "document-signer",
      notBefore: certificatesFrom,
      notAfter: certificatesUntil,
    });
    this.#documentSignerKey = signer.privateKey;
    this.#issuer = issuer;
  }

  /** The IACA root as a trust list entry. */
  trusted(): TrustedIaca {
    return { issuer: this.#issuer, certificate: this.#root };
  }

  /** An mDL (`MDoc` with one issuer-signed document, CBOR, base64url) valid for a year from `now`. */
  async issue(input: { birthDate: string; deviceJwk: JWK; now: Date }): Promise<string> {
    const ages = Object.fromEntries(
      euPidThresholds.map((t) => [`age_over_${t}`, ageVerdictAt(input.birthDate, t, input.now) === "over"]),
    );
    const signed = await new Document(mdlDocType, mdocContext)
      .addIssuerNameSpace(mdlNamespace, ages)
      .useDigestAlgorithm("SHA-256")
      .addValidityInfo({
        signed: input.now,
        validFrom: input.now,
        validUntil: new Date(input.now.getTime() + mdocLifetimeMs),
      })
      .addDeviceKeyInfo({ deviceKey: input.deviceJwk })
      .sign(
        {
          issuerPrivateKey: this.#documentSignerKey.export({ format: "jwk" }) as JWK,
          issuerCertificate: new Uint8Array(this.#documentSigner),
          alg: "ES256",
        },
        mdocContext,
      );
    return Buffer.from(new MDoc([signed]).encode()).toString("base64url");
  }
}
