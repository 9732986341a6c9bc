import { Migration } from "@svc/platform";

/**
 * create-verification-link with an Idempotency-Key (requests/idempotent-creates.ts): the session that a
 * create consumed keeps the SHA-256 of the gateway's scoped key hash, and the request's flow secret
 * sealed, so that a retry of that create, whose answer was lost, gets the same request again.
 */
export class IdempotentCreates extends Migration {
  override up(): void {
    this.addSql(
      `alter table "sessions" add column "idempotency_token_hash" bytea null, add column "flow_secret_sealed" bytea null`,
    );
  }
}
