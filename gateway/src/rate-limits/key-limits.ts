import type { MikroORM } from "@mikro-orm/postgresql";
import type { Clock } from "@svc/platform";
import { CredentialError } from "../credentials/directory.ts";
import { ApiKey } from "../credentials/entities.ts";
import { type BucketName, type RateTier, tierOfKey } from "./rate-tiers.ts";

export interface BucketLimit {
  bucket: BucketName;
  limit: number;
  /** The bucket's window; absent for in_flight. */
  windowSeconds?: number;
  /** Set for this key rather than the tier's default. */
  raised: boolean;
}

const uuidText = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const bucketsOf = (tier: RateTier): { bucket: BucketName; limit: number; windowSeconds?: number }[] => [
  ...tier.buckets.map((b) => ({ bucket: b.name, limit: b.limit, windowSeconds: b.windowSeconds })),
  ...(tier.inFlight === undefined ? [] : [{ bucket: "in_flight" as const, limit: tier.inFlight }]),
];

/**
 * Per-key limits ("limits can be raised per key on request"). Stored in `key_rate_limits`, which
 * `take_rate_limit` reads in the same statement that counts, so a change holds on every replica from
 * the next request on.
 */
export class KeyLimits {
  readonly #orm: MikroORM;
  readonly #clock: Clock;

  constructor(options: { orm: MikroORM; clock: Clock }) {
    this.#orm = options.orm;
    this.#clock = options.clock;
  }

  /** Sets one bucket's limit for a key (0: back to the tier's default) and returns every bucket's limit now. */
  async set(keyId: string, bucketName: string, limit: number): Promise<BucketLimit[]> {
    if (!uuidText.test(keyId)) throw new CredentialError("invalid", "key_id must be a UUID");
    if (!Number.isInteger(limit) || limit < 0 || limit > 1_000_000_000)
      throw new CredentialError("invalid", "limit must be a whole number from 0 to 1000000000");
    const em = this.#orm.em.fork();
    const key = await em.findOne(ApiKey, { id: keyId });
    if (!key) throw new CredentialError("not_found", `no key ${keyId}`);
    const buckets = bucketsOf(tierOfKey(key.type, key.environment));
    // The spec's tier table calls a development key's per_minute bucket `burst`.
    const name =
      bucketName === "burst" && key.type === "secret" && key.environment === "development" ? "per_minute" : bucketName;
    if (!buckets.some((b) => b.bucket === name)) {
      throw new CredentialError(
        "invalid",
        `a ${key.environment} ${key.type} key has the buckets ${buckets.map((b) => b.bucket).join(", ")}, not ${bucketName}`,
      );
    }
    if (limit === 0) await em.execute(`delete from key_rate_limits where key_id = ? and bucket = ?`, [keyId, name]);
    else {
      await em.execute(
        `insert into key_rate_limits (key_id, bucket, "limit", updated_at) values (?, ?, ?, ?)
         on conflict (key_id, bucket) do update set "limit" = excluded."limit", updated_at = excluded.updated_at`,
        [keyId, name, limit, this.#clock.now()],
      );
    }
    const raised = await em.execute<{ bucket: string; limit: number }[]>(
      `select bucket, "limit" from key_rate_limits where key_id = ?`,
      [keyId],
    );
    return buckets.map((b) => {
      const own = raised.find((r) => r.bucket === b.bucket);
      return { ...b, limit: own?.limit ?? b.limit, raised: own !== undefined };
    });
  }
}
