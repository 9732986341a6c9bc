import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from "node:crypto";
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
 * The private key's `d` is stored sealed, never in clear: AES-256-GCM under a key derived from the
 * gateway's key pepper (GATEWAY_KEY_PEPPER), with the kid as additional data; `d_sealed` is base64url
 * of nonce, ciphertext and tag.
 */
type StoredJwk = JWK & { d_sealed?: string };

const sealingKeyOf = (pepper: Buffer) =>
  Buffer.from(hkdfSync("sha256", pepper, Buffer.alloc(0), "svc gateway: development identity provider key", 32));

function sealD(key: Buffer, kid: string, d: string): string {
  const nonce = randomBytes(12);
  const cipher = createCipheriv("aes-256-gcm", key, nonce).setAAD(Buffer.from(kid));
  return Buffer.concat([nonce, cipher.update(d, "utf8"), cipher.final(), cipher.getAuthTag()]).toString("base64url");
}

function openD(key: Buffer, kid: string, sealed: string): string {
  const bytes = Buffer.from(sealed, "base64url");
  try {
    const decipher = createDecipheriv("aes-256-gcm", key, bytes.subarray(0, 12)).setAAD(Buffer.from(kid));
    decipher.setAuthTag(bytes.subarray(bytes.length - 16));
    return Buffer.concat([decipher.update(bytes.subarray(12, bytes.length - 16)), decipher.final()]).toString("utf8");
  } catch {
    throw new Error(
      `the development identity provider's key ${kid} is sealed under another GATEWAY_KEY_PEPPER; delete its row from gateway.dev_idp_keys to make a new one`,
    );
  }
}

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
  static async open(options: {
    orm: MikroORM;
    clock: Clock;
    publicOrigin: string;
    /** GATEWAY_KEY_PEPPER: the private key is stored sealed under a key derived from it. */
    pepper: Buffer;
  }): Promise<DevIdentityProvider> {
    const em = options.orm.em.fork();
    const sealingKey = sealingKeyOf(options.pepper);
    let rows = await em.execute<{ kid: string; private_jwk: StoredJwk }[]>(
      `select kid, private_jwk from dev_idp_keys order by created_at limit 1`,
    );
    if (!rows[0]) {
      const { privateKey } = await generateKeyPair("ES256", { extractable: true });
      const { d = "", ...publicPart } = await exportJWK(privateKey);
      const kid = await calculateJwkThumbprint(publicPart);
      await em.execute(
        `insert into dev_idp_keys (kid, private_jwk, created_at) values (?, ?::jsonb, ?) on conflict do nothing`,
        [kid, JSON.stringify({ ...publicPart, d_sealed: sealD(sealingKey, kid, d) }), options.clock.now()],
      );
      rows = await em.execute(`select kid, private_jwk from dev_idp_keys order by created_at limit 1`);
    }
    const [row] = rows;
    if (!row) throw new Error("dev_idp_keys holds no key after one was inserted");
    const { kid, private_jwk: stored } = row;
    const { d: clear, d_sealed: sealed, ...publicJwk } = stored;
    // A key an earlier version kept in clear is sealed now, in place.
    if (clear !== undefined)
      await em.execute(`update dev_idp_keys set private_jwk = ?::jsonb where kid = ?`, [
        JSON.stringify({ ...publicJwk, d_sealed: sealD(sealingKey, kid, clear) }),
        kid,
      ]);
    const d = clear ?? openD(sealingKey, kid, sealed ?? "");
    return new DevIdentityProvider({
      issuer: `${options.publicOrigin}${devIdpPath}`,
      clock: options.clock,
      kid,
      privateKey: (await importJWK({ ...publicJwk, d }, "ES256")) as CryptoKey,
      publicJwk: { ...publicJwk, kid, alg: "ES256", use: "sig" },
    });
  }

  /**
   * A user session for a sign-in identity of this provider; as an ID token, with the client's `nonce`.
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
