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
