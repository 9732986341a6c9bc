import { importJWK, type JWK } from "jose";
import { type SignatureCheck, signatureCheck } from "./es256.ts";

/** At most one fetch of the key set a minute for kids it does not hold, so a flood of forged kids costs nothing. */
const refreshIntervalMs = 60_000;

export interface KeySetOptions {
  /** `{jwks_url}`: `{api_origin}/.well-known/jwks.json`. */
  url: string;
  fetch?: typeof fetch;
  /** Milliseconds since the epoch. */
  now?: () => number;
}

/**
 * The service's public key set, cached by `kid`. A token naming a kid not held makes it fetch the set again,
 * at most once a minute; an answer of 503 (`jwks_unavailable`) or a failed fetch keeps the keys it holds, as
 * the spec says.
 */
export class KeySet {
  private readonly keys = new Map<string, { key: CryptoKey; check: SignatureCheck }>();
  private lastFetchAt = Number.NEGATIVE_INFINITY;
  private inFlight: Promise<void> | undefined;
  private readonly fetch: typeof fetch;
  private readonly now: () => number;

  private readonly url: string;

  constructor(options: KeySetOptions) {
    this.url = options.url;
    this.fetch = options.fetch ?? globalThis.fetch.bind(globalThis);
    this.now = options.now ?? Date.now;
  }

  /** The ES256 public key published under `kid`, or undefined when the set has none. */
  async key(kid: string): Promise<CryptoKey | undefined> {
    return (await this.held(kid))?.key;
  }

  /**
   * The signature check of the key published under `kid`, made once when the key is fetched; a promise only when
   * the set must be fetched first, so a check under a held key waits on nothing.
   */
  check(kid: string): SignatureCheck | undefined | Promise<SignatureCheck | undefined> {
    return this.keys.get(kid)?.check ?? this.held(kid).then((held) => held?.check);
  }

  private async held(kid: string) {
    const held = this.keys.get(kid);
    if (held !== undefined) return held;
    if (this.now() - this.lastFetchAt >= refreshIntervalMs) {
      this.inFlight ??= this.refresh().finally(() => {
        this.inFlight = undefined;
      });
      await this.inFlight;
    } else if (this.inFlight !== undefined) await this.inFlight;
    return this.keys.get(kid);
  }

  private async refresh(): Promise<void> {
    this.lastFetchAt = this.now();
    let body: { keys?: unknown };
    try {
      const response = await this.fetchOnceMoreOnFailure();
      if (!response.ok) return;
      body = (await response.json()) as { keys?: unknown };
    } catch {
      return;
    }
    if (!Array.isArray(body.keys)) return;
    for (const jwk of body.keys as JWK[]) {
      if (typeof jwk.kid !== "string" || jwk.kty !== "EC" || jwk.crv !== "P-256" || this.keys.has(jwk.kid)) continue;
      try {
        const key = (await importJWK({ ...jwk, alg: "ES256" }, "ES256")) as CryptoKey;
        this.keys.set(jwk.kid, { key, check: await signatureCheck(jwk) });
      } catch {
        // A key the platform cannot import is as good as absent: tokens naming it are unknown_key.
      }
    }
  }

  /**
   * A pooled keep-alive connection the server has closed fails the first request sent on it; one immediate retry
   * opens a fresh one, so that a reset does not leave the set empty for the minute the refresh limit holds.
   */
  private async fetchOnceMoreOnFailure(): Promise<Response> {
    const request = () => this.fetch(this.url, { headers: { accept: "application/json" } });
    try {
      return await request();
    } catch {
      return await request();
    }
  }
}
