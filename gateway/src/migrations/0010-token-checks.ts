import { Migration } from "@svc/platform";

/**
 * The ledger of first token checks (src/rate-limits/token-checks.ts), moved here from signing's schema:
 * one row per attestation token whose check passed every other rule, written in the statement that
 * decides the request's rate limits. The primary key decides which check of a token is the first across
 * every replica. Rows are inserted and deleted, never updated; the sweep finds them on `expires_at`.
 */
export class CreateTokenChecks extends Migration {
  override up(): void {
    this.addSql(`create table "token_checks" (
      "payload_hash" bytea primary key,
      "checked_at" timestamptz not null,
      "expires_at" timestamptz not null)`);
    this.addSql(`create index "token_checks_by_expiry" on "token_checks" ("expires_at")`);
  }
}
