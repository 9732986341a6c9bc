import { createHash, X509Certificate } from "node:crypto";
import type { Clock } from "@svc/platform";
import { DevIssuers, developmentMdocStatusListUri, developmentStatusListUri } from "./dev-issuers.ts";
import { type Es256KeyPair, keyPairFromSeed } from "./es256.ts";
import { boundedJwtStatusList, maxStatusListBytes, readCapped } from "./status-list-bounds.ts";
import type { TrustedIaca, TrustedIssuer } from "./trust-list.ts";
import type { VerifierDependencies } from "./verification.ts";

export interface WalletDependencies {
  verifierKey: Es256KeyPair;
  /** The verifier's certificate (DER) and the client_id it makes: `x509_hash:` its base64url SHA-256. */
  verifierCertificate: Buffer;
  clientId: string;
  credentialTypes: readonly string[];
  verifier: VerifierDependencies;
  /** IACA roots of mdoc issuers: the configured ones, plus the development issuer's while it is on. */
  iacaRoots: readonly TrustedIaca[];
  devIssuers: DevIssuers;
}

const statusListTimeoutMs = 3000;
/** The two forms of a status list token: a JWT for SD-JWT VCs, a CWT for mdocs. */
type StatusListForm = "jwt" | "cwt";

/**
 * A status list token is kept this long on our clock: one list answers for many credentials, so
 * fetching (or, for the development issuer, signing) it per presentation would cost more than the
 * presentation's own signatures. A revocation is seen at most this late.
 */
const statusListCacheMs = 5 * 60_000;
const maxCachedStatusLists = 256;

/**
 * The verifier's keys and trust: the configured issuers, plus the development issuer while it is on
 * (production refuses to start with it on). Status lists of the development issuer are answered here;
 * others are fetched over HTTPS, briefly and bounded.
 */
export function walletDependencies(config: {
  verifierKey: Buffer;
  verifierCertificate: Buffer;
  devWalletIssuerKey: Buffer | null;
  walletIssuers: TrustedIssuer[];
  walletIacaRoots: TrustedIaca[];
  walletCredentialTypes: string[];
  clock: Clock;
}): WalletDependencies {
  const devIssuers = new DevIssuers(config.devWalletIssuerKey ?? undefined);
  const development = devIssuers.trusted();
  const trusted = new Map([...config.walletIssuers, ...(development ? [development] : [])].map((i) => [i.iss, i]));
  // Tokens held as text: a JWT as it is, a CWT as base64url, so one cache and one signer check serve both.
  const statusLists = new Map<string, { token: string; from: number; signedBy: Set<string> }>();
  const statusListToken = async (uri: string, form: StatusListForm) => {
    const now = config.clock.now();
    if (development && form === "jwt" && uri === developmentStatusListUri) return devIssuers.statusList(now);
    if (development && form === "cwt" && uri === developmentMdocStatusListUri)
      return devIssuers.mdocStatusList(now).toString("base64url");
    if (!uri.startsWith("https://")) throw new Error("a status list is fetched over https only");
    const response = await fetch(uri, {
      signal: AbortSignal.timeout(statusListTimeoutMs),
      redirect: "error",
      headers: { accept: `application/statuslist+${form}` },
    });
    if (!response.ok) {
      await response.body?.cancel();
      throw new Error(`status list ${uri}: ${response.status}`);
    }
    const body = await readCapped(response, maxStatusListBytes);
    return form === "jwt" ? boundedJwtStatusList(body.toString("utf8")) : body.toString("base64url");
  };
  const statusList = async (uri: string, form: StatusListForm) => {
    const key = `${form} ${uri}`;
    const now = config.clock.now().getTime();
    const cached = statusLists.get(key);
    if (cached && cached.from <= now && now < cached.from + statusListCacheMs) return cached.token;
    const token = await statusListToken(uri, form);
    statusLists.delete(key);
    if (statusLists.size >= maxCachedStatusLists) statusLists.delete(statusLists.keys().next().value as string);
    statusLists.set(key, { token, from: now, signedBy: new Set() });
    return token;
  };
  const verifierKey = keyPairFromSeed(config.verifierKey);
  const verifierCertificate = config.verifierCertificate;
  return {
    verifierKey,
    verifierCertificate,
    clientId: x509HashClientId(verifierCertificate, verifierKey),
    credentialTypes: config.walletCredentialTypes,
    devIssuers,
    iacaRoots: [...config.walletIacaRoots, ...[devIssuers.trustedIaca()].filter((root) => root !== undefined)],
    verifier: {
      trustedIssuer: (iss) => trusted.get(iss),
      statusList: (uri) => statusList(uri, "jwt"),
      cwtStatusList: async (uri) => Buffer.from(await statusList(uri, "cwt"), "base64url"),
      statusListSignedBy: (token, signer, verify) => {
        const held = [...statusLists.values()].find((entry) => entry.token === token);
        if (held?.signedBy.has(signer)) return true;
        const signed = verify();
        if (signed) held?.signedBy.add(signer);
        return signed;
      },
    },
  };
}

/**
 * The client identifier of OpenID4VP 1.0 §5.9.3's `x509_hash` prefix: the base64url SHA-256 of the
 * leaf certificate's DER, which must certify the key that signs the request objects.
 */
function x509HashClientId(certificate: Buffer, key: Es256KeyPair): string {
  const certified = new X509Certificate(certificate).publicKey.export({ format: "jwk" });
  if (certified.x !== key.publicJwk.x || certified.y !== key.publicJwk.y)
    throw new Error("ACCOUNT_VERIFIER_CERTIFICATE does not certify the public key of ACCOUNT_VERIFIER_KEY");
  return `x509_hash:${createHash("sha256").update(certificate).digest("base64url")}`;
}
