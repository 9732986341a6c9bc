import type { Queryable } from "@svc/platform";
import type pg from "pg";

/** What a request with a key finds. */
export type Claim =
  /** This request runs the operation; `claimId` fences its write. */
  | { kind: "run"; claimId: string }
  /** The key's first request ran to a final answer: answer it again (sealed, see answer-seal.ts). */
  | { kind: "replay"; sealed: Buffer }
  /** The key was first used with another request. */
  | { kind: "reused" }
  /** Another request with this key is running the operation now. */
  | { kind: "in_use" };

/**
 * The shared table of keys (migration 0007). Every step is one statement, so two replicas racing on a
 * key agree: exactly one of them claims it.
 */
export class IdempotencyStore {
  readonly #db: Pick<pg.Pool, "query">;

  constructor(db: Pick<pg.Pool, "query">) {
    this.#db = db;
  }

  /**
   * Claims the key for this request when it is new, expired, left open by a request whose answer was
   * not final (a 5xx, the client gone), or held by a request whose lease ended (its replica died);
   * otherwise reads what stands in the way. A retaken key keeps its first use's expiry.
   */
  async claim(request: {
    keyHash: Buffer;
    digest: Buffer;
    claimId: string;
    now: Date;
    leaseUntil: Date;
    expiresAt: Date;
  }): Promise<Claim> {
    const { rows } = await this.#db.query<{
      claimed: boolean;
      same_request: boolean | null;
      state: string | null;
      response_sealed: Buffer | null;
    }>({
      name: "claim_idempotency_key",
      text: `with claimed as (
         insert into idempotency_keys as k (key_hash, request_digest, state, claim_id, locked_until, created_at, expires_at)
         values ($1, $2, 'running', $3, $5, $4, $6)
         on conflict (key_hash) do update set
           state = 'running', claim_id = excluded.claim_id, locked_until = excluded.locked_until, response_sealed = null,
           request_digest = excluded.request_digest,
           created_at = case when k.expires_at <= $4 then excluded.created_at else k.created_at end,
           expires_at = case when k.expires_at <= $4 then excluded.expires_at else k.expires_at end
         where k.expires_at <= $4
           or (k.request_digest = excluded.request_digest and (k.state = 'open' or (k.state = 'running' and k.locked_until <= $4)))
         returning 1
       )
       select true as claimed, null::boolean as same_request, null as state, null::bytea as response_sealed from claimed
       union all
       select false, k.request_digest = $2, k.state, k.response_sealed from idempotency_keys k
       where k.key_hash = $1 and not exists (select 1 from claimed)`,
      values: [request.keyHash, request.digest, request.claimId, request.now, request.leaseUntil, request.expiresAt],
    });
    const row = rows[0];
    if (row?.claimed) return { kind: "run", claimId: request.claimId };
    // Neither claimed nor seen: another request inserted the key after this statement's snapshot.
    if (!row) return { kind: "in_use" };
    if (!row.same_request) return { kind: "reused" };
    if (row.state === "done" && row.response_sealed) return { kind: "replay", sealed: row.response_sealed };
    return { kind: "in_use" };
  }

  /** Stores the final answer, sealed, of the request that holds the claim. */
  async finish(keyHash: Buffer, claimId: string, sealed: Buffer): Promise<void> {
    await this.#db.query({
      name: "finish_idempotency_key",
      text: `update idempotency_keys set state = 'done', response_sealed = $3, claim_id = null, locked_until = null
       where key_hash = $1 and claim_id = $2 and state = 'running'`,
      values: [keyHash, claimId, sealed],
    });
  }

  /** The answer was not final: the key stays bound to its request, and the next retry runs the operation. */
  async release(keyHash: Buffer, claimId: string): Promise<void> {
    await this.#db.query({
      name: "release_idempotency_key",
      text: `update idempotency_keys set state = 'open', claim_id = null, locked_until = null
       where key_hash = $1 and claim_id = $2 and state = 'running'`,
      values: [keyHash, claimId],
    });
  }
}

/** Deletes at most `limit` expired keys, oldest first, through the expiry index; returns how many. */
export async function sweepExpiredKeys(db: Queryable, now: Date, limit: number): Promise<number> {
  const { rowCount } = await db.query({
    text: `delete from idempotency_keys where key_hash in (
       select key_hash from idempotency_keys where expires_at <= $1 order by expires_at limit $2)`,
    values: [now, limit],
  });
  return rowCount ?? 0;
}
