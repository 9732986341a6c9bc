import type { KeyObject } from "node:crypto";
import { signJws } from "./es256.ts";
import { type AgeDocType, euAgeVerification, mdl } from "./mdoc-verifier.ts";

/** The thresholds of the EU PID's `age_equal_or_over`: what an ahead-of-time presentation asks for. */
export const euPidThresholds = [12, 14, 16, 18, 21, 65] as const;

/** The DCQL ids of the two credentials asked for, either one; the `vp_token` answers under one of them. */
export const credentialQueryId = "age";
/** The DCQL ids of the mdoc queries, each for one document type: the mDL, and the EU age verification attestation. */
export const mdocQueries: readonly { id: string; type: AgeDocType }[] = [
  { id: "age_mdoc", type: mdl },
  { id: "age_av", type: euAgeVerification },
];
/** Addresses on the verifier's origin (the gateway) where the wallet fetches and posts. */
export const requestUriOf = (clientId: string, id: string) => `${clientId}/wallet/requests/${id}`;
export const responseUriOf = (clientId: string, id: string) => `${clientId}/wallet/responses/${id}`;

/** What both request objects carry. */
interface RequestInput {
  id: string;
  /** The verifier's origin (the gateway's public origin), where the request and response URIs live. */
  verifierOrigin: string;
  /** The verifier's client identifier: `x509_hash:<base64url SHA-256 of the x5c leaf>`. */
  clientId: string;
  nonce: string;
  thresholds: readonly number[];
  credentialTypes: readonly string[];
  issuedAt: Date;
  expiresAt: Date;
}

const seconds = (at: Date) => Math.floor(at.getTime() / 1000);

/**
 * The DCQL query: an SD-JWT VC of an accepted type disclosing exactly the asked `age_equal_or_over`
 * claims, or an mDL (ISO 18013-5) or an EU age verification attestation disclosing exactly the asked
 * `age_over_NN` elements of its namespace (`credential_sets`: any one of the three).
 */
const dcqlQuery = (input: RequestInput) => ({
  credentials: [
    {
      id: credentialQueryId,
      format: "dc+sd-jwt",
      meta: { vct_values: input.credentialTypes },
      claims: input.thresholds.map((t) => ({ path: ["age_equal_or_over", String(t)] })),
    },
    ...mdocQueries.map(({ id, type }) => ({
      id,
      format: "mso_mdoc",
      meta: { doctype_value: type.docType },
      claims: input.thresholds.map((t) => ({
        path: [type.namespace, `age_over_${String(t).padStart(2, "0")}`],
        intent_to_retain: false,
      })),
    })),
  ],
  credential_sets: [{ options: [[credentialQueryId], ...mdocQueries.map(({ id }) => [id])] }],
});

/** The verifier's signing key and its certificate (DER), which the `x5c` header carries as the leaf. */
export interface RequestSigner {
  privateKey: KeyObject;
  certificate: Buffer;
}

/**
 * A JAR signed for the `x509_hash` client identifier prefix (OpenID4VP 1.0 §5.9.3): the wallet hashes
 * the `x5c` leaf, compares it to the client_id, and verifies the signature with the leaf's key.
 */
const signedRequest = (claims: Record<string, unknown>, signer: RequestSigner) =>
  signJws({ typ: "oauth-authz-req+jwt", x5c: [signer.certificate.toString("base64")] }, claims, signer.privateKey);

/**
 * The OpenID4VP 1.0 authorization request, signed (JAR, `typ: oauth-authz-req+jwt`): the DCQL query,
 * answered by `direct_post` to the response URI with this nonce; `state` is the presentation id.
 */
export function requestObject(input: RequestInput, signer: RequestSigner): string {
  return signedRequest(
    {
      iss: input.clientId,
      aud: "https://self-issued.me/v2",
      client_id: input.clientId,
      response_type: "vp_token",
      response_mode: "direct_post",
      response_uri: responseUriOf(input.verifierOrigin, input.id),
      nonce: input.nonce,
      state: input.id,
      iat: seconds(input.issuedAt),
      exp: seconds(input.expiresAt),
      dcql_query: dcqlQuery(input),
    },
    signer,
  );
}

/**
 * The same request for the Digital Credentials API (OpenID4VP 1.0 Appendix A, a signed request:
 * protocol `openid4vp-v1-signed`): `response_mode` `dc_api`, so the wallet answers to the page that
 * asked, which is `expected_origins`' one entry; no `response_uri` and no `state`, which the DC API
 * does not use; the same `client_id` and nonce.
 */
export function dcApiRequestObject(input: RequestInput & { origin: string }, signer: RequestSigner): string {
  return signedRequest(
    {
      iss: input.clientId,
      aud: "https://self-issued.me/v2",
      client_id: input.clientId,
      response_type: "vp_token",
      response_mode: "dc_api",
      expected_origins: [input.origin],
      nonce: input.nonce,
      iat: seconds(input.issuedAt),
      exp: seconds(input.expiresAt),
      dcql_query: dcqlQuery(input),
    },
    signer,
  );
}

/** The audience of a holder binding made through the DC API: the page's origin, prefixed (Appendix A.4). */
export const dcApiAudience = (origin: string) => `origin:${origin}`;
