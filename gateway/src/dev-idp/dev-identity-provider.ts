import type { MikroORM } from "@mikro-orm/postgresql";
import type { Clock } from "@svc/platform";
import {
  type CryptoKey,
  calculateJwkThumbprint,
  exportJWK,
  generateKeyPair,
  importJWK,
  type JWK,
  type JWTPayload,
  jwtVerify,
  SignJWT,
} from "jose";

/** Where the development identity provider lives below `{api_origin}`; also its issuer's path. */
export const devIdpPath = "/dev-idp";
export const devIdpJwksPath = `${devIdpPath}/.well-known/jwks.json`;
/**
 * The audience of the user sessions it mints: the app API. It is also the one client the provider
 * knows, the web app, whose ID tokens are those sessions.
 */
export const devClientId = "svc-app";
const appAudience = devClientId;

const sessionLifetimeSeconds = 3600;

/**
 * A development stand-in for the OpenID Connect issuer the app signs in with: it mints user-session
 * JWTs (ES256) for a sign-in identity (issuer, subject), so a whole ceremony runs without a phone or an
 * outside identity provider. The web app reaches it through its OpenID Connect endpoints
 * (`oidc-routes.ts`); the console's MintDevSession through `mint` directly. Its key is kept in the gateway schema so every replica and restart signs
 * with the same one. Production never starts it.
 */
export class DevIdentityProvider {
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

  /** Loads the provider's key, creating it on first start (concurrent first starts keep one). */
  static async open(options: { orm: MikroORM; clock: Clock; publicOrigin: string }): Promise<DevIdentityProvider> {
    const em = options.orm.em.fork();
    let rows = await em.execute<{ kid: string; private_jwk: JWK }[]>(
      `select kid, private_jwk from dev_idp_keys order by created_at limit 1`,
    );
    if (!rows[0]) {
      const { privateKey } = await generateKeyPair("ES256", { extractable: true });
      const jwk = await exportJWK(privateKey);
      const kid = await calculateJwkThumbprint(jwk);
      await em.execute(
        `insert into dev_idp_keys (kid, private_jwk, created_at) values (?, ?::jsonb, ?) on conflict do nothing`,
        [kid, JSON.stringify(jwk), options.clock.now()],
      );
      rows = await em.execute(`select kid, private_jwk from dev_idp_keys order by created_at limit 1`);
    }
    const [row] = rows;
    if (!row) throw new Error("dev_idp_keys holds no key after one was inserted");
    const { kid, private_jwk: privateJwk } = row;
    const { d: _secret, ...publicJwk } = privateJwk;
    return new DevIdentityProvider({
      issuer: `${options.publicOrigin}${devIdpPath}`,
      clock: options.clock,
      kid,
      privateKey: (await importJWK(privateJwk, "ES256")) as CryptoKey,
      publicJwk: { ...publicJwk, kid, alg: "ES256", use: "sig" },
    });
  }

  /** A user session for a sign-in identity of this provider; as an ID token, with the client's `nonce`. */
  async mint(subject: string, nonce?: string): Promise<{ token: string; expiresAt: Date; lifetimeSeconds: number }> {
    const now = Math.floor(this.#clock.now().getTime() / 1000);
    const token = await new SignJWT(nonce === undefined ? {} : { nonce, auth_time: now })
      .setProtectedHeader({ alg: "ES256", kid: this.#kid, typ: "JWT" })
      .setIssuer(this.issuer)
      .setSubject(subject)
      .setAudience(appAudience)
      .setIssuedAt(now)
      .setExpirationTime(now + sessionLifetimeSeconds)
      .sign(this.#privateKey);
    return {
      token,
      expiresAt: new Date((now + sessionLifetimeSeconds) * 1000),
      lifetimeSeconds: sessionLifetimeSeconds,
    };
  }

  /** Verifies a session it minted (signature, issuer, audience, expiry at the injected clock). */
  async verify(token: string): Promise<JWTPayload> {
    const { payload } = await jwtVerify(token, this.#publicJwk, {
      issuer: this.issuer,
      audience: appAudience,
      algorithms: ["ES256"],
      currentDate: this.#clock.now(),
    });
    return payload;
  }

  jwks(): { keys: JWK[] } {
    return { keys: [this.#publicJwk] };
  }
}
