import { Migration } from "@svc/platform";

class CreateHumans extends Migration {
  override up(): void {
    this.addSql(`create table "human" (
      "id" uuid primary key,
      "created_at" timestamptz not null,
      "sandbox_behavior" text null check ("sandbox_behavior" in ('confirm', 'decline', 'silent')),
      "sandbox_environment" text null check ("sandbox_environment" = 'development'),
      check (("sandbox_behavior" is null) = ("sandbox_environment" is null)))`);
    this.addSql(`create table "sign_in_identity" (
      "issuer" text not null,
      "subject" text not null,
      "svc_user_id" uuid not null references "human" ("id") on delete cascade,
      "created_at" timestamptz not null,
      primary key ("issuer", "subject"))`);
    this.addSql(`create index "sign_in_identity_by_human" on "sign_in_identity" ("svc_user_id")`);
  }
}

export const createHumans = { name: "0001_humans", class: CreateHumans };
