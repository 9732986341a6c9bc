import { createPrivateKey, createPublicKey, type KeyObject } from "node:crypto";
import type { MikroORM } from "@mikro-orm/postgresql";
import type { Clock, Logger } from "@svc/platform";
import { createSigner, type JwsSigner } from "./compact-jws.ts";
import { openPrivateKey } from "./key-encryption.ts";
import { windowOf } from "./key-rotation.ts";
import { isPublished, type KeyWindow, keyState, signingKeyAt } from "./rotation-schedule.ts";
import { SigningKey } from "./signing-key.entity.ts";

export interface RingKey {
  kid: string;
  x: string;
  y: string;
  window: KeyWindow;
  publicKey: KeyObject;
  /** Present while the key is pending or active and its private half opened under our KEK. */
  signer?: JwsSigner;
  /** Why the private half did not open, when it did not. */
  openError?: Error;
}

export class SigningKeyUnavailableError extends Error {}

/** Unknown kids come from outside; this bounds how often they can send us to the database. */
const unknownKidRefreshMs = 1000;

/**
 * The key ring held in memory, so signing and verifying never wait for the database. The database
 * stays the truth: the ring reloads periodically, before answering for the key set, and when a token
 * names a kid it does not know (a key another replica added).
 */
export class KeyRing {
  readonly #orm: MikroORM;
  readonly #kek: Buffer;
  readonly #clock: Clock;
  readonly #logger: Logger;
  #keys = new Map<string, RingKey>();
  #refreshedAt = Number.NEGATIVE_INFINITY;
  #refreshing: Promise<Error[]> | undefined;

  constructor(options: { orm: MikroORM; kek: Buffer; clock: Clock; logger: Logger }) {
    this.#orm = options.orm;
    this.#kek = options.kek;
    this.#clock = options.clock;
    this.#logger = options.logger;
  }

  /** The first load, at start: a key that should sign but does not open stops the service. */
  async load(): Promise<void> {
    const problems = await this.refresh();
    if (problems.length > 0) throw problems[0];
  }

  /** Reloads from the database; a key that does not open is logged and left unable to sign. */
  refresh(): Promise<Error[]> {
    if (this.#refreshing) return this.#refreshing;
    // Counted from the attempt, so a database outage does not turn every unknown kid into a query.
    this.#refreshedAt = performance.now();
    this.#refreshing = this.#reload().finally(() => {
      this.#refreshing = undefined;
    });
    return this.#refreshing;
  }

  async #reload(): Promise<Error[]> {
    const rows = await this.#orm.em.fork().find(SigningKey, {});
    const now = this.#clock.now();
    const problems: Error[] = [];
    const keys = new Map<string, RingKey>();
    for (const row of rows) {
      const window = windowOf(row);
      const key: RingKey = this.#keys.get(row.kid) ?? {
        kid: row.kid,
        x: row.x,
        y: row.y,
        window,
        publicKey: publicKeyOf(row.x, row.y),
      };
      key.window = window;
      const state = keyState(key.window, now);
      if (state === "pending" || state === "active") {
        if (key.signer === undefined) this.#open(key, row.sealedPrivateKey, row.kekId);
        if (key.openError) problems.push(key.openError);
      } else {
        // A retired key signs nothing again: its private half has no reason to stay in memory.
        delete key.signer;
      }
      keys.set(key.kid, key);
    }
    this.#keys = keys;
    for (const problem of problems) this.#logger.error("signing key cannot be used", { error: problem });
    return problems;
  }

  #open(key: RingKey, sealed: Uint8Array, sealedKekId: string): void {
    try {
      const pkcs8 = openPrivateKey(this.#kek, key.kid, { bytes: sealed, kekId: sealedKekId });
      const privateKey = createPrivateKey({ key: pkcs8, format: "der", type: "pkcs8" });
      pkcs8.fill(0);
      const derived = createPublicKey(privateKey).export({ format: "jwk" });
      if (derived.x !== key.x || derived.y !== key.y)
        throw new Error(`signing key ${key.kid}: the private half does not match the stored public key`);
      key.signer = createSigner(key.kid, privateKey);
      delete key.openError;
    } catch (error) {
      key.openError = error as Error;
    }
  }

  /** The signer for `now`; throws when no key may sign (the ring is empty or its key did not open). */
  signer(now: Date): JwsSigner {
    const key = signingKeyAt(this.#keys.values(), now);
    if (key === undefined) throw new SigningKeyUnavailableError("no signing key is active");
    if (key.signer === undefined)
      throw new SigningKeyUnavailableError(
        `signing key ${key.kid} cannot sign: ${key.openError?.message ?? "not opened"}`,
      );
    return key.signer;
  }

  /** The public key for a kid that is published at `now`; an unknown kid reloads the ring at most once a second. */
  async publishedKey(kid: string, now: Date): Promise<KeyObject | undefined> {
    if (!this.#keys.has(kid)) await this.#refreshTolerantly(unknownKidRefreshMs);
    const key = this.#keys.get(kid);
    return key !== undefined && isPublished(key.window, now) ? key.publicKey : undefined;
  }

  /** The published keys after a reload, so every replica serves a key the moment any replica added it. */
  async publishedFresh(now: Date): Promise<RingKey[]> {
    await this.#refreshTolerantly(0);
    return this.published(now);
  }

  /**
   * Reloads unless a reload started less than `olderThanMs` ago (joining one under way). A database
   * outage must not turn a key-set answer or an invalid token into an error: the keys in memory still hold.
   */
  async #refreshTolerantly(olderThanMs: number): Promise<void> {
    try {
      if (this.#refreshing) await this.#refreshing;
      else if (performance.now() - this.#refreshedAt >= olderThanMs) await this.refresh();
    } catch (error) {
      this.#logger.warn("key ring reload failed; answering with the keys in memory", { error });
    }
  }

  published(now: Date): RingKey[] {
    return [...this.#keys.values()]
      .filter((key) => isPublished(key.window, now))
      .sort((a, b) => a.window.signsFrom.getTime() - b.window.signsFrom.getTime());
  }
}

const publicKeyOf = (x: string, y: string): KeyObject =>
  createPublicKey({ key: { kty: "EC", crv: "P-256", x, y }, format: "jwk" });
