import type { Clock } from "@svc/platform/clock";
import { type CryptoKey, type JWK, SignJWT } from "jose";
import { signingKeyFromSeed } from "./signing-key.ts";

/**
 * The audience of the user sessions it mints: the app API. It is also the one client the provider
 * knows, the web app, whose ID tokens are those sessions.
 */
export const clientId = "svc-app";

const sessionLifetimeSeconds = 3600;

/**
 * A development stand-in for the OpenID Connect issuer the app signs in with: it mints user-session
 * JWTs (ES256) for any subject, so a whole ceremony runs without a phone or an outside identity provider.
 */
export class IdentityProvider {
  readonly issuer: string;
  readonly #clock: Clock;
  readonly #kid: string;
  readonly #privateKey: CryptoKey;
  readonly #publicJwk: JWK;

  private constructor(options: { issuer: string; clock: Clock; kid: string; privateKey: CryptoKey; publicJwk: JWK }) {
    this.issuer = options.issuer;
    this.#clock = options.clock;
    this.#kid = options.kid;
    this.#privateKey = options.privateKey;
    this.#publicJwk = options.publicJwk;
  }

  static async open(options: { issuer: string; clock: Clock; seed: string }): Promise<IdentityProvider> {
    return new IdentityProvider({ ...options, ...(await signingKeyFromSeed(options.seed)) });
  }

  /**
   * A user session for a subject; as an ID token, with the client's `nonce`.
   * With an `email`, the token carries it and `email_verified` as given.
   */
  async mint(
    subject: string,
    options: { nonce?: string | undefined; email?: { address: string; verified: boolean } | undefined } = {},
  ): Promise<{ token: string; expiresAt: Date; lifetimeSeconds: number }> {
    const { nonce, email } = options;
    const now = Math.floor(this.#clock.now().getTime() / 1000);
    const token = await new SignJWT({
      ...(nonce === undefined ? {} : { nonce, auth_time: now }),
      ...(email === undefined ? {} : { email: email.address, email_verified: email.verified }),
    })
      .setProtectedHeader({ alg: "ES256", kid: this.#kid, typ: "JWT" })
      .setIssuer(this.issuer)
      .setSubject(subject)
      .setAudience(clientId)
      .setIssuedAt(now)
      .setExpirationTime(now + sessionLifetimeSeconds)
      .sign(this.#privateKey);
    return {
      token,
      expiresAt: new Date((now + sessionLifetimeSeconds) * 1000),
      lifetimeSeconds: sessionLifetimeSeconds,
    };
  }

  jwks(): { keys: JWK[] } {
    return { keys: [this.#publicJwk] };
  }
}
