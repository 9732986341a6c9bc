import type { Clock } from "@svc/platform";
import { DevIssuers, developmentStatusListUri } from "./dev-issuers.ts";
import { type Es256KeyPair, keyPairFromSeed } from "./es256.ts";
import type { VerifierDependencies } from "./sd-jwt-vc-verifier.ts";
import type { TrustedIaca, TrustedIssuer } from "./trust-list.ts";

export interface WalletDependencies {
  verifierKey: Es256KeyPair;
  credentialTypes: readonly string[];
  verifier: VerifierDependencies;
  /** IACA roots of mdoc issuers: the configured ones, plus the development issuer's while it is on. */
  iacaRoots: readonly TrustedIaca[];
  devIssuers: DevIssuers;
}

const statusListTimeoutMs = 3000;
const maxStatusListBytes = 256 * 1024;

/**
 * The verifier's keys and trust: the configured issuers, plus the development issuer while it is on
 * (production refuses to start with it on). Status lists of the development issuer are answered here;
 * others are fetched over HTTPS, briefly and bounded.
 */
export function walletDependencies(config: {
  verifierKey: Buffer;
  devWalletIssuerKey: Buffer | null;
  walletIssuers: TrustedIssuer[];
  walletIacaRoots: TrustedIaca[];
  walletCredentialTypes: string[];
  clock: Clock;
}): WalletDependencies {
  const devIssuers = new DevIssuers(config.devWalletIssuerKey ?? undefined);
  const development = devIssuers.trusted();
  const trusted = new Map([...config.walletIssuers, ...(development ? [development] : [])].map((i) => [i.iss, i]));
  return {
    verifierKey: keyPairFromSeed(config.verifierKey),
    credentialTypes: config.walletCredentialTypes,
    devIssuers,
    iacaRoots: [...config.walletIacaRoots, ...[devIssuers.trustedIaca()].filter((root) => root !== undefined)],
    verifier: {
      trustedIssuer: (iss) => trusted.get(iss),
      statusList: async (uri) => {
        if (development && uri === developmentStatusListUri) return devIssuers.statusList(config.clock.now());
        if (!uri.startsWith("https://")) throw new Error("a status list is fetched over https only");
        const response = await fetch(uri, { signal: AbortSignal.timeout(statusListTimeoutMs), redirect: "error" });
        const body = await response.text();
        if (!response.ok || body.length > maxStatusListBytes) throw new Error(`status list ${uri}: ${response.status}`);
        return body;
      },
    },
  };
}
