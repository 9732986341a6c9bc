import type { KeyObject } from "node:crypto";
import { signJws } from "./es256.ts";
import { mdlDocType, mdlNamespace } from "./mdoc-verifier.ts";

/** The thresholds of the EU PID's `age_equal_or_over`: what an ahead-of-time presentation asks for. */
export const euPidThresholds = [12, 14, 16, 18, 21, 65] as const;

/** The DCQL ids of the two credentials asked for, either one; the `vp_token` answers under one of them. */
export const credentialQueryId = "age";
export const mdocQueryId = "age_mdoc";
/** Addresses on the verifier's origin (the gateway) where the wallet fetches and posts. */
export const requestUriOf = (clientId: string, id: string) => `${clientId}/wallet/requests/${id}`;
export const responseUriOf = (clientId: string, id: string) => `${clientId}/wallet/responses/${id}`;

/**
 * The OpenID4VP 1.0 authorization request, signed (JAR, `typ: oauth-authz-req+jwt`): a DCQL query
 * for either an SD-JWT VC of an accepted type disclosing exactly the asked `age_equal_or_over` claims
 * or an mDL (ISO 18013-5) disclosing exactly the asked `age_over_NN` elements (`credential_sets`: one
 * of the two), answered by `direct_post` to the response URI with this nonce; `state` is the
 * presentation id.
 */
export function requestObject(
  input: {
    id: string;
    clientId: string;
    nonce: string;
    thresholds: readonly number[];
    credentialTypes: readonly string[];
    issuedAt: Date;
    expiresAt: Date;
  },
  signingKey: { privateKey: KeyObject; publicJwk: unknown },
): string {
  const seconds = (at: Date) => Math.floor(at.getTime() / 1000);
  return signJws(
    { typ: "oauth-authz-req+jwt", jwk: signingKey.publicJwk },
    {
      iss: input.clientId,
      aud: "https://self-issued.me/v2",
      client_id: input.clientId,
      response_type: "vp_token",
      response_mode: "direct_post",
      response_uri: responseUriOf(input.clientId, input.id),
      nonce: input.nonce,
      state: input.id,
      iat: seconds(input.issuedAt),
      exp: seconds(input.expiresAt),
      dcql_query: {
        credentials: [
          {
            id: credentialQueryId,
            format: "dc+sd-jwt",
            meta: { vct_values: input.credentialTypes },
            claims: input.thresholds.map((t) => ({ path: ["age_equal_or_over", String(t)] })),
          },
          {
            id: mdocQueryId,
            format: "mso_mdoc",
            meta: { doctype_value: mdlDocType },
            claims: input.thresholds.map((t) => ({
              path: [mdlNamespace, `age_over_${String(t).padStart(2, "0")}`],
              intent_to_retain: false,
            })),
          },
        ],
        credential_sets: [{ options: [[credentialQueryId], [mdocQueryId]] }],
      },
    },
    signingKey.privateKey,
  );
}
