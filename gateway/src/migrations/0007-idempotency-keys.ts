import { Migration } from "@svc/platform";

export class CreateIdempotencyKeys extends Migration {
  override up(): void {
    // Idempotency-Key answers (src/idempotency/): one row per key and scope, named by a keyed hash of
    // both, so every replica shares them and a database read names no credential. `claim_id` fences the
    // request that runs the operation; `response_sealed` is its answer once final, sealed under a key
    // derived from the Idempotency-Key itself (src/idempotency/answer-seal.ts). Swept after `expires_at`.
    this.addSql(`create table "idempotency_keys" (
      "key_hash" bytea primary key,
      "request_digest" bytea not null,
      "state" text not null check ("state" in ('running', 'open', 'done')),
      "claim_id" uuid null,
      "locked_until" timestamptz null,
      "response_sealed" bytea null,
      "created_at" timestamptz not null,
      "expires_at" timestamptz not null,
      check (("state" = 'done') = ("response_sealed" is not null)))`);
    this.addSql(`create index "idempotency_keys_expires_at" on "idempotency_keys" ("expires_at")`);
  }
}
