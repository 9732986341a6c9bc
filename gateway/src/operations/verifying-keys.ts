import { createPublicKey, type KeyObject } from "node:crypto";
import { timestampMs } from "@bufbuild/protobuf/wkt";
import type { Client } from "@connectrpc/connect";
import type { Clock, Logger } from "@svc/platform";
import type { SigningService } from "@svc/proto/signing/v1/signing_pb.js";

interface VerifyingKey {
  key: KeyObject;
  /** Milliseconds since the epoch; undefined while it is the newest key. */
  unpublishAt: number | undefined;
}

interface KeySet {
  issuer: string;
  keys: Map<string, VerifyingKey>;
}

/** How old (by the injected clock) the kept key set may be before a check starts fetching it again, in the background. */
const defaultMaxAgeMs = 30_000;
/** Unknown kids come from outside: this bounds how often they can send us to signing (and signing to its database). */
const defaultUnknownKidRefreshMs = 1000;

/**
 * The key set verify-token checks signatures against, kept in memory as `KeyObject`s with the issuer
 * signing vouches for, so no check waits for signing. Signing stays the truth: the set is fetched again
 * when it is older than `maxAgeMs`, and at once (at most every `unknownKidRefreshMs`) when a token names
 * a kid it does not hold, which is how a key another replica just added is found. A key stops verifying
 * at its `unpublish_at`, as in signing's own ring, without waiting for a fetch. Every instant is the
 * injected clock's, so tests move it instead of sleeping.
 */
export class VerifyingKeys {
  readonly #signing: Pick<Client<typeof SigningService>, "getKeySet">;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #maxAgeMs: number;
  readonly #unknownKidRefreshMs: number;
  #kept: KeySet | undefined;
  #fetchedAt = Number.NEGATIVE_INFINITY;
  #attemptedAt = Number.NEGATIVE_INFINITY;
  #fetching: Promise<KeySet> | undefined;

  constructor(options: {
    signing: Pick<Client<typeof SigningService>, "getKeySet">;
    clock: Clock;
    logger: Logger;
    maxAgeMs?: number;
    unknownKidRefreshMs?: number;
  }) {
    this.#signing = options.signing;
    this.#clock = options.clock;
    this.#logger = options.logger;
    this.#maxAgeMs = options.maxAgeMs ?? defaultMaxAgeMs;
    this.#unknownKidRefreshMs = options.unknownKidRefreshMs ?? defaultUnknownKidRefreshMs;
  }

  /**
   * The issuer and the key published now under `kid` (undefined when there is none). Rejects only when
   * no key set was ever fetched and signing cannot give one: then nothing can be decided.
   */
  async lookup(kid: string): Promise<{ issuer: string; key: KeyObject | undefined }> {
    const now = this.#clock.now().getTime();
    let set = this.#kept ?? (await this.#fetch());
    if (!set.keys.has(kid) && now - this.#attemptedAt >= this.#unknownKidRefreshMs)
      set = (await this.#refreshTolerantly()) ?? set;
    else if (now - this.#fetchedAt >= this.#maxAgeMs) void this.#refreshTolerantly();
    const found = set.keys.get(kid);
    const published = found !== undefined && (found.unpublishAt === undefined || now < found.unpublishAt);
    return { issuer: set.issuer, key: published ? found.key : undefined };
  }

  /** A fetch that leaves the kept set in place when signing cannot answer; joins one under way. */
  #refreshTolerantly(): Promise<KeySet | undefined> {
    return this.#fetch().catch((error: unknown) => {
      this.#logger.warn("key set fetch for verify-token failed; checking with the keys in memory", { error });
      return undefined;
    });
  }

  #fetch(): Promise<KeySet> {
    this.#fetching ??= this.#load().finally(() => {
      this.#fetching = undefined;
    });
    return this.#fetching;
  }

  async #load(): Promise<KeySet> {
    // Counted from the attempt, so an unreachable signing does not turn every unknown kid into a call.
    this.#attemptedAt = this.#clock.now().getTime();
    const response = await this.#signing.getKeySet({});
    const keys = new Map<string, VerifyingKey>();
    for (const jwk of response.keys) {
      const kept = this.#kept?.keys.get(jwk.kid);
      keys.set(jwk.kid, {
        key: kept?.key ?? createPublicKey({ key: { kty: jwk.kty, crv: jwk.crv, x: jwk.x, y: jwk.y }, format: "jwk" }),
        unpublishAt: jwk.unpublishAt === undefined ? undefined : timestampMs(jwk.unpublishAt),
      });
    }
    this.#kept = { issuer: response.issuer, keys };
    this.#fetchedAt = this.#attemptedAt;
    return this.#kept;
  }
}
