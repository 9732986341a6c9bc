import { createHash, randomBytes } from "node:crypto";
import type { MikroORM } from "@mikro-orm/postgresql";
import type { Clock } from "@svc/platform";

/** Long enough to go from the redirect to the token request, short enough that a leaked code is stale. */
const codeLifetimeMs = 60_000;

/** What a code was issued for: the token request must name the same client and redirect, and prove PKCE. */
export interface CodeGrant {
  subject: string;
  clientId: string;
  redirectUri: string;
  /** base64url SHA-256 of the client's code_verifier (PKCE S256). */
  codeChallenge: string;
  nonce: string | undefined;
}

const digest = (text: string) => createHash("sha256").update(text, "utf8").digest("base64url");

/**
 * The development identity provider's authorization codes, in the gateway schema so any replica
 * redeems what another issued. A code is redeemed once: the row is deleted by the statement that
 * reads it, so two concurrent token requests with one code get it once between them.
 */
export class AuthorizationCodes {
  readonly #orm: MikroORM;
  readonly #clock: Clock;

  constructor(options: { orm: MikroORM; clock: Clock }) {
    this.#orm = options.orm;
    this.#clock = options.clock;
  }

  async issue(grant: CodeGrant): Promise<string> {
    const code = randomBytes(32).toString("base64url");
    const now = this.#clock.now();
    const em = this.#orm.em.fork();
    // Codes never redeemed are dropped by the next issue: development traffic is small.
    await em.execute(`delete from dev_idp_codes where expires_at < ?`, [now]);
    await em.execute(
      `insert into dev_idp_codes (code_hash, subject, client_id, redirect_uri, code_challenge, nonce, expires_at)
       values (?, ?, ?, ?, ?, ?, ?)`,
      [
        digest(code),
        grant.subject,
        grant.clientId,
        grant.redirectUri,
        grant.codeChallenge,
        grant.nonce ?? null,
        new Date(now.getTime() + codeLifetimeMs),
      ],
    );
    return code;
  }

  /**
   * The grant of a code presented with its client, redirect and PKCE verifier; `undefined` when the code is
   * unknown, used, expired, or presented with anything else than it was issued for (spent all the same).
   */
  async redeem(request: {
    code: string;
    clientId: string;
    redirectUri: string;
    codeVerifier: string;
  }): Promise<CodeGrant | undefined> {
    const [row] = await this.#orm.em.fork().execute<
      {
        subject: string;
        client_id: string;
        redirect_uri: string;
        code_challenge: string;
        nonce: string | null;
        expires_at: Date;
      }[]
    >(`delete from dev_idp_codes where code_hash = ? returning *`, [digest(request.code)]);
    if (!row) return undefined;
    if (new Date(row.expires_at).getTime() <= this.#clock.now().getTime()) return undefined;
    if (row.client_id !== request.clientId || row.redirect_uri !== request.redirectUri) return undefined;
    if (digest(request.codeVerifier) !== row.code_challenge) return undefined;
    return {
      subject: row.subject,
      clientId: row.client_id,
      redirectUri: row.redirect_uri,
      codeChallenge: row.code_challenge,
      nonce: row.nonce ?? undefined,
    };
  }
}
