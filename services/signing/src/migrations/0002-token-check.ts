import { Migration } from "@svc/platform";

class CreateTokenCheck extends Migration {
  override up(): void {
    this.addSql(`create table "token_check" (
      "payload_hash" bytea primary key,
      "checked_at" timestamptz not null,
      "expires_at" timestamptz not null)`);
    this.addSql(`create index "token_check_expires_at" on "token_check" ("expires_at")`);
  }
}

export const createTokenCheck = { name: "0002_token_check", class: CreateTokenCheck };
