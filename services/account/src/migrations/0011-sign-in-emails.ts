import { Migration } from "@svc/platform";

class AddSignInEmails extends Migration {
  override up(): void {
    // The address the identity provider last vouched for (`email_verified`), as HMAC-SHA256 of the
    // lowercased address under ACCOUNT_EMAIL_PEPPER, and since when this identity holds it: inquire's
    // `user_email` finds the identity that came to hold it last.
    this.addSql(`alter table "sign_in_identity" add column "email_hash" bytea null, add column "email_verified_at" timestamptz null,
      add constraint "sign_in_identity_email_since" check (("email_hash" is null) = ("email_verified_at" is null))`);
    this.addSql(
      `create index "sign_in_identity_by_email" on "sign_in_identity" ("email_hash", "email_verified_at" desc) where "email_hash" is not null`,
    );
  }
}

export const addSignInEmails = { name: "0011_sign_in_emails", class: AddSignInEmails };
