import { Migration } from "@svc/platform";

class CreateAccountLinks extends Migration {
  override up(): void {
    this.addSql(`create table "account_link" (
      "id" uuid primary key,
      "organization_id" text not null,
      "environment" text not null check ("environment" in ('development', 'production')),
      "ref_hash" bytea not null,
      "svc_user_id" uuid not null references "human" ("id"),
      "handle" text not null check ("handle" ~ '^OP_[A-Za-z0-9]{12}$'),
      "surface_id" uuid null,
      "secured_at" timestamptz not null,
      "status" text not null check ("status" in ('active', 'unlinked')),
      "unlinked_at" timestamptz null,
      "unlinked_by" text null check ("unlinked_by" in ('human', 'platform')),
      "unlink_reason" text null check ("unlink_reason" in ('human', 'platform', 'credential_changed')),
      check (("status" = 'active') = ("unlinked_at" is null)),
      check (("unlinked_at" is null) = ("unlinked_by" is null) and ("unlinked_at" is null) = ("unlink_reason" is null)),
      unique ("organization_id", "environment", "handle"))`);
    // One active link per partner account, and one per human on a platform: the database, not a
    // read before the write, decides between concurrent calls.
    this.addSql(
      `create unique index "account_link_active_ref" on "account_link" ("organization_id", "environment", "ref_hash") where "status" = 'active'`,
    );
    this.addSql(
      `create unique index "account_link_active_human" on "account_link" ("organization_id", "environment", "svc_user_id") where "status" = 'active'`,
    );
  }
}

export const createAccountLinks = { name: "0005_account_links", class: CreateAccountLinks };
