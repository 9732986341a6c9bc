import { Migration } from "@svc/platform";

export class CreateDevIdentityProviderCodes extends Migration {
  override up(): void {
    // Authorization codes of the development identity provider (development only), kept by their
    // SHA-256 so a database read never yields a usable code; each is deleted when redeemed.
    this.addSql(`create table "dev_idp_codes" (
      "code_hash" text primary key,
      "subject" text not null,
      "client_id" text not null,
      "redirect_uri" text not null,
      "code_challenge" text not null,
      "nonce" text null,
      "expires_at" timestamptz not null)`);
    this.addSql(`create index "dev_idp_codes_expires_at" on "dev_idp_codes" ("expires_at")`);
  }
}
