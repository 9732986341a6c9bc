import type { KeyObject } from "node:crypto";
import { signJws } from "./es256.ts";

/** The thresholds of the EU PID's `age_equal_or_over`: what an ahead-of-time presentation asks for. */
export const euPidThresholds = [12, 14, 16, 18, 21, 65] as const;

/** The DCQL id of the one credential asked for; the `vp_token` answers under it. */
export const credentialQueryId = "age";
/** Addresses on the verifier's origin (the gateway) where the wallet fetches and posts. */
export const requestUriOf = (clientId: string, id: string) => `${clientId}/wallet/requests/${id}`;
const responseUriOf = (clientId: string, id: string) => `${clientId}/wallet/responses/${id}`;

/**
 * The OpenID4VP 1.0 authorization request, signed (JAR, `typ: oauth-authz-req+jwt`): a DCQL query
 * for one SD-JWT VC of the accepted type disclosing exactly the asked `age_equal_or_over` claims,
 * answered by `direct_post` to the response URI with this nonce; `state` is the presentation id.
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
        ],
      },
    },
    signingKey.privateKey,
  );
}
