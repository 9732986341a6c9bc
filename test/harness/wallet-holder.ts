import { createHash, generateKeyPairSync, type KeyObject, sign } from "node:crypto";

/**
 * A wallet's holder side for hostile presentations: the tests get an honest credential bound to a
 * holder key (`IssueDevAgeCredential`), then build its presentation with one thing altered.
 */
export interface Holder {
  privateKey: KeyObject;
  jwk: string;
}

export function newHolder(): Holder {
  const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
  return { privateKey, jwk: JSON.stringify(publicKey.export({ format: "jwk" })) };
}

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");
const decode = (segment: string) => JSON.parse(Buffer.from(segment, "base64url").toString("utf8"));

/** The JSON payload of a compact JWS. */
export const jwtPayload = (jwt: string) => decode(jwt.split(".")[1] ?? "") as Record<string, unknown>;

/** An issued SD-JWT VC (`jwt~d1~…~dn~`) as its issuer-signed JWT and disclosures. */
export function credentialParts(credential: string): { issuerJwt: string; disclosures: string[] } {
  const [issuerJwt = "", ...disclosures] = credential.split("~").filter((part) => part !== "");
  return { issuerJwt, disclosures };
}

/** The claim name a disclosure discloses (`[salt, name, value]`). */
export const disclosedName = (disclosure: string) => String(decode(disclosure)[1]);

/** The same disclosure (same salt and name) with another value: its digest is no longer signed. */
export function withValue(disclosure: string, value: unknown): string {
  const [salt, name] = decode(disclosure) as [string, string];
  return b64([salt, name, value]);
}

/** A JWS with another header and no valid signature, such as `alg: none`. */
export function withHeader(jwt: string, header: Record<string, unknown>, signature = ""): string {
  const [, payload = ""] = jwt.split(".");
  return `${b64(header)}.${payload}.${signature}`;
}

/** The issuer-signed JWT with its payload changed and the issuer's signature kept. */
export function withPayload(jwt: string, change: Record<string, unknown>): string {
  const [header = "", payload = "", signature = ""] = jwt.split(".");
  return `${header}.${b64({ ...decode(payload), ...change })}.${signature}`;
}

/**
 * `issuerJwt~disclosures~` followed by a KB-JWT signed by `key` over `nonce`, `aud`, `iat` and the
 * sd_hash of `sdHashOver` (by default the presented disclosures), or with no KB-JWT when `key` is null.
 */
export function presentation(input: {
  issuerJwt: string;
  disclosures: string[];
  key: KeyObject | null;
  nonce: string;
  aud: string;
  iat: number;
  sdHashOver?: string[];
}): string {
  const sdJwt = (disclosures: string[]) => `${[input.issuerJwt, ...disclosures].join("~")}~`;
  const presented = sdJwt(input.disclosures);
  if (input.key === null) return presented;
  const bindingInput = `${b64({ typ: "kb+jwt", alg: "ES256" })}.${b64({
    iat: input.iat,
    aud: input.aud,
    nonce: input.nonce,
    sd_hash: createHash("sha256")
      .update(sdJwt(input.sdHashOver ?? input.disclosures))
      .digest("base64url"),
  })}`;
  const signature = sign("sha256", Buffer.from(bindingInput), { key: input.key, dsaEncoding: "ieee-p1363" });
  return `${presented}${bindingInput}.${signature.toString("base64url")}`;
}

/** The `vp_token` of OpenID4VP 1.0 answering the DCQL credential id `age`. */
export const vpToken = (presented: string) => JSON.stringify({ age: [presented] });
