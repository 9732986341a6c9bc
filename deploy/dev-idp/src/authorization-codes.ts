import { createHash, randomBytes } from "node:crypto";
import type { Clock } from "@svc/platform/clock";

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
 * Authorization codes in memory: the provider is one development process, and a code lives a minute.
 * A code is redeemed once: it is removed when it is looked up, whatever the outcome.
 */
export class AuthorizationCodes {
  readonly #clock: Clock;
  readonly #grants = new Map<string, CodeGrant & { expiresAt: number }>();

  constructor(clock: Clock) {
    this.#clock = clock;
  }

  issue(grant: CodeGrant): string {
    const now = this.#clock.now().getTime();
    for (const [hash, held] of this.#grants) if (held.expiresAt <= now) this.#grants.delete(hash);
    const code = randomBytes(32).toString("base64url");
    this.#grants.set(digest(code), { ...grant, expiresAt: now + codeLifetimeMs });
    return code;
  }

  /**
   * The grant of a code presented with its client, redirect and PKCE verifier; `undefined` when the code is
   * unknown, used, expired, or presented with anything else than it was issued for (spent all the same).
   */
  redeem(request: {
    code: string;
    clientId: string;
    redirectUri: string;
    codeVerifier: string;
  }): CodeGrant | undefined {
    const hash = digest(request.code);
    const held = this.#grants.get(hash);
    if (!held) return undefined;
    this.#grants.delete(hash);
    if (held.expiresAt <= this.#clock.now().getTime()) return undefined;
    if (held.clientId !== request.clientId || held.redirectUri !== request.redirectUri) return undefined;
    if (digest(request.codeVerifier) !== held.codeChallenge) return undefined;
    const { expiresAt: _, ...grant } = held;
    return grant;
  }
}
