import { randomBytes } from "node:crypto";
import { digest, generateSalt } from "@sd-jwt/crypto-nodejs";
import { createHeaderAndPayload, StatusList } from "@sd-jwt/jwt-status-list";
import { SDJwtVcInstance } from "@sd-jwt/sd-jwt-vc";
import type { JWK } from "jose";
import { refuse } from "../../refusal.ts";
import { ageVerdictAt, parseCalendarDate } from "../age-evaluation.ts";
import { DevMdocIssuer } from "./dev-mdoc-issuer.ts";
import { type Es256KeyPair, es256, keyPairFromSeed, signEs256, signJws } from "./es256.ts";
import { euAgeVerification, mdl } from "./mdoc-verifier.ts";
import { euPidThresholds } from "./presentation-request.ts";
import type { TrustedIaca, TrustedIssuer } from "./trust-list.ts";

const developmentIssuerId = "https://wallet-issuer.development.invalid";
const untrustedIssuerId = "https://untrusted-issuer.development.invalid";
/** The development issuer's status lists (JWT for SD-JWT VCs, CWT for mdocs): index 0 is valid, index 1 revoked. */
export const developmentStatusListUri = `${developmentIssuerId}/status/1`;
export const developmentMdocStatusListUri = `${developmentIssuerId}/status/mdoc/1`;
const developmentStatuses = [0, 1];
const ageCredentialType = "urn:eudi:pid:1";
const credentialLifetimeMs = 365 * 86_400_000;

/**
 * The development issuer (trusted in development only: its key is a development secret) and the
 * untrusted issuer (a key made at start, which no trust list holds), so tests, the demo and partners'
 * sandboxes have credentials without a real wallet.
 */
export class DevIssuers {
  readonly #development: Es256KeyPair | undefined;
  readonly #untrusted: Es256KeyPair;
  readonly #developmentMdoc: DevMdocIssuer | undefined;
  readonly #untrustedMdoc: DevMdocIssuer;

  constructor(developmentSeed: Buffer | undefined) {
    this.#development = developmentSeed ? keyPairFromSeed(developmentSeed) : undefined;
    this.#developmentMdoc =
      developmentSeed &&
      new DevMdocIssuer(developmentIssuerId, developmentSeed, {
        root: { country: "UT", commonName: "svc development IACA" },
        documentSigner: { country: "UT", commonName: "svc development document signer" },
      });
    const untrustedSeed = randomBytes(32);
    this.#untrusted = keyPairFromSeed(untrustedSeed);
    this.#untrustedMdoc = new DevMdocIssuer(untrustedIssuerId, untrustedSeed, {
      root: { country: "UT", commonName: "svc untrusted IACA" },
      documentSigner: { country: "UT", commonName: "svc untrusted document signer" },
    });
  }

  /** The development issuer as a trust list entry, while it is on. */
  trusted(): TrustedIssuer | undefined {
    return this.#development && { iss: developmentIssuerId, keys: [this.#development.publicJwk] };
  }

  /** The development issuer's IACA root, while it is on. */
  trustedIaca(): TrustedIaca | undefined {
    return this.#developmentMdoc?.trusted();
  }

  /** The development issuer's status list token, signed as the issuer. */
  statusList(now: Date): string {
    if (!this.#development) throw new Error("the development wallet issuer is off");
    const { header, payload } = createHeaderAndPayload(
      new StatusList(developmentStatuses, 1),
      { iss: developmentIssuerId, sub: developmentStatusListUri, iat: Math.floor(now.getTime() / 1000) },
      { alg: es256, typ: "statuslist+jwt" },
    );
    return signJws(header, payload, this.#development.privateKey);
  }

  /** The development issuer's mdoc status list token (CWT, CBOR bytes), signed by its status list signer. */
  mdocStatusList(now: Date): Buffer {
    if (!this.#developmentMdoc) throw new Error("the development wallet issuer is off");
    return this.#developmentMdoc.statusList(developmentMdocStatusListUri, developmentStatuses, now);
  }

  /**
   * A credential whose only claims are the EU PID age thresholds reached on `now`, each disclosable
   * alone: an SD-JWT VC, or an mdoc (base64url CBOR) with `age_over_NN` elements: an mDL (`mdoc`) or
   * an EU age verification attestation (`mdoc-av`). The development
   * issuer's credentials of both formats carry a status list entry, revoked when asked; the untrusted
   * issuer's mdocs carry none (they are refused before any status is read).
   */
  async issue(input: {
    birthDate: string;
    holderJwk: unknown;
    issuer: "development" | "untrusted";
    format: "sd-jwt-vc" | "mdoc" | "mdoc-av";
    revoked: boolean;
    now: Date;
  }): Promise<string> {
    try {
      parseCalendarDate(input.birthDate);
    } catch (error) {
      throw refuse("invalid_argument", (error as Error).message);
    }
    if (input.format !== "sd-jwt-vc") {
      const mdocIssuer = input.issuer === "development" ? this.#developmentMdoc : this.#untrustedMdoc;
      if (!mdocIssuer) throw refuse("failed_precondition", "the development wallet issuer is off in this deployment");
      if (input.revoked && input.issuer !== "development")
        throw refuse("invalid_argument", "an mdoc of the untrusted issuer has no status to revoke");
      const status =
        input.issuer === "development" ? { idx: input.revoked ? 1 : 0, uri: developmentMdocStatusListUri } : undefined;
      return mdocIssuer
        .issue({
          birthDate: input.birthDate,
          deviceJwk: input.holderJwk as JWK,
          now: input.now,
          status,
          type: input.format === "mdoc-av" ? euAgeVerification : mdl,
        })
        .catch(() => {
          throw refuse("invalid_argument", "holder_jwk must be a P-256 public key (JWK) for an mdoc");
        });
    }
    const keys = input.issuer === "development" ? this.#development : this.#untrusted;
    if (!keys) throw refuse("failed_precondition", "the development wallet issuer is off in this deployment");
    const issuer = new SDJwtVcInstance({
      hasher: digest,
      saltGenerator: generateSalt,
      signAlg: es256,
      signer: async (data: string) => signEs256(data, keys.privateKey),
    });
    const iat = Math.floor(input.now.getTime() / 1000);
    const ages = Object.fromEntries(
      euPidThresholds.map((t) => [String(t), ageVerdictAt(input.birthDate, t, input.now) === "over"]),
    );
    return issuer.issue(
      {
        iss: input.issuer === "development" ? developmentIssuerId : untrustedIssuerId,
        vct: ageCredentialType,
        iat,
        exp: iat + credentialLifetimeMs / 1000,
        cnf: { jwk: input.holderJwk },
        status: { status_list: { idx: input.revoked ? 1 : 0, uri: developmentStatusListUri } },
        age_equal_or_over: ages,
      },
      // The type cannot express selectively disclosable properties of a record with numeric names.
      { age_equal_or_over: { _sd: euPidThresholds.map(String) } } as never,
      { header: { typ: "dc+sd-jwt" } },
    );
  }
}
