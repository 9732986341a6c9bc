import { createHash, createPublicKey, type KeyObject, sign, X509Certificate } from "node:crypto";
import { cborDecode, cborEncode, DataItem, Document, MDoc } from "@animo-id/mdoc";
import type { JWK } from "jose";
import { ageVerdictAt } from "../age-evaluation.ts";
import { keyPairFromSeed } from "./es256.ts";
import { type CertificateName, issueCertificate } from "./mdoc-certificates.ts";
import { mdocContext } from "./mdoc-context.ts";
import { msoStatus, type StatusListEntry, signStatusListCwt } from "./mdoc-status.ts";
import type { AgeDocType } from "./mdoc-verifier.ts";
import { euPidThresholds } from "./presentation-request.ts";
import type { TrustedIaca } from "./trust-list.ts";

/** Fixed and wide, so that tests moving their clock years either way still meet valid certificates. */
const certificatesFrom = new Date("2000-01-01T00:00:00Z");
const certificatesUntil = new Date("2100-01-01T00:00:00Z");
const mdocLifetimeMs = 365 * 86_400_000;
/** What a status list token of this issuer advises as its cache lifetime (`ttl`). */
const statusListTtlSeconds = 300;

/**
 * `signed` (an issuer-signed document's MSO as the COSE_Sign1 array `[protected, unprotected,
 * payload, signature]`) with `status` added to the MSO and signed again: `@animo-id/mdoc`'s builder
 * writes no `status`, so the MSO it signed is amended and the signature made anew over it.
 */
function withMsoStatus(issuerAuth: unknown[], status: StatusListEntry, key: KeyObject): void {
  const [protectedHeader, , payload] = issuerAuth as [Uint8Array, unknown, Uint8Array];
  const mso = cborDecode(payload) as DataItem<Map<string, unknown>>;
  const amended = cborEncode(DataItem.fromData(new Map([...mso.data, ["status", msoStatus(status)]])));
  const toBeSigned = cborEncode(["Signature1", protectedHeader, new Uint8Array(0), amended]);
  issuerAuth[2] = amended;
  issuerAuth[3] = sign("sha256", toBeSigned, { key, dsaEncoding: "ieee-p1363" });
}

/**
 * An mdoc issuer of the development wallet: an IACA root and the document signer and status list
 * signer it certifies, all P-256 keys derived from `seed`. It issues mdocs (an mDL, or an EU age verification attestation) whose only elements are the
 * `age_over_NN` of the EU PID thresholds, bound to the holder's device key, with a status list entry
 * when asked, and signs status list tokens (CWT).
 */
export class DevMdocIssuer {
  readonly #documentSignerKey: KeyObject;
  readonly #documentSigner: Buffer;
  readonly #statusSignerKey: KeyObject;
  readonly #statusSigner: Buffer;
  readonly #root: X509Certificate;
  readonly #issuer: string;

  constructor(issuer: string, seed: Buffer, names: { root: CertificateName; documentSigner: CertificateName }) {
    const derived = (label: string) => keyPairFromSeed(createHash("sha256").update(label).update(seed).digest());
    const root = derived("mdoc iaca root");
    const signer = derived("mdoc document signer");
    const statusSigner = derived("mdoc status list signer");
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
    this.#statusSigner = issueCertificate({
      serial: 3,
      subject: { ...names.documentSigner, commonName: `${names.documentSigner.commonName} (status lists)` },
      issuer: names.root,
      publicKey: createPublicKey(statusSigner.privateKey),
      signingKey: root.privateKey,
      role: "status-list-signer",
      notBefore: certificatesFrom,
      notAfter: certificatesUntil,
    });
    this.#statusSignerKey = statusSigner.privateKey;
    this.#issuer = issuer;
  }

  /** The IACA root as a trust list entry. */
  trusted(): TrustedIaca {
    return { issuer: this.#issuer, certificate: this.#root };
  }

  /** The status list token at `uri` (CWT, CBOR bytes) holding `statuses`, signed at `now`. */
  statusList(uri: string, statuses: number[], now: Date): Buffer {
    return signStatusListCwt({
      uri,
      statuses,
      issuedAt: now,
      ttlSeconds: statusListTtlSeconds,
      signer: { key: this.#statusSignerKey, certificate: this.#statusSigner },
    });
  }

  /**
   * An mdoc of `type` (`MDoc` with one issuer-signed document, CBOR, base64url) valid for a year from `now`, with
   * `status` as its MSO's status list entry when given.
   */
  async issue(input: {
    birthDate: string;
    deviceJwk: JWK;
    now: Date;
    status?: StatusListEntry;
    type: AgeDocType;
  }): Promise<string> {
    const ages = Object.fromEntries(
      euPidThresholds.map((t) => [`age_over_${t}`, ageVerdictAt(input.birthDate, t, input.now) === "over"]),
    );
    const signed = await new Document(input.type.docType, mdocContext)
      .addIssuerNameSpace(input.type.namespace, ages)
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
    const mdoc = new MDoc([signed]).encode();
    if (!input.status) return Buffer.from(mdoc).toString("base64url");
    const decoded = cborDecode(mdoc) as Map<string, Map<string, Map<string, unknown>>[]>;
    const issuerAuth = decoded.get("documents")?.[0]?.get("issuerSigned")?.get("issuerAuth") as unknown[];
    withMsoStatus(issuerAuth, input.status, this.#documentSignerKey);
    return Buffer.from(cborEncode(decoded)).toString("base64url");
  }
}
