import { Migration } from "@svc/platform";

export class CreateDevIdentityProviderKeys extends Migration {
  override up(): void {
    // The development identity provider's signing key. Development only: production never creates a row.
    this.addSql(`create table "dev_idp_keys" (
      "kid" text primary key,
      "private_jwk" jsonb not null,
      "created_at" timestamptz not null)`);
  }
}
