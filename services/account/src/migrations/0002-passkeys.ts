import { Migration } from "@svc/platform";

class CreatePasskeys extends Migration {
  override up(): void {
    this.addSql(`create table "passkey" (
      "credential_id" text primary key,
      "svc_user_id" uuid not null references "human" ("id") on delete cascade,
      "rp_id" text null,
      "public_key" bytea not null,
      "sign_count" bigint not null check ("sign_count" >= 0),
      "transports" text[] not null default '{}',
      "backed_up" boolean not null,
      "created_at" timestamptz not null,
      "last_used_at" timestamptz null)`);
    this.addSql(`create index "passkey_by_human" on "passkey" ("svc_user_id")`);

    this.addSql(`create table "passkey_ceremony" (
      "id" uuid primary key,
      "kind" text not null check ("kind" in ('registration', 'assertion')),
      "challenge" text not null unique,
      "svc_user_id" uuid null,
      "creates_human" boolean not null,
      "rp_id" text not null,
      "origin" text not null,
      "binding" text null,
      "created_at" timestamptz not null,
      "expires_at" timestamptz not null,
      "consumed_at" timestamptz null,
      check (("kind" = 'assertion') = ("binding" is not null)),
      check (not "creates_human" or ("kind" = 'registration' and "svc_user_id" is not null)))`);
    this.addSql(`create index "passkey_ceremony_expires_at" on "passkey_ceremony" ("expires_at")`);

    this.addSql(`create table "sandbox_passkey" (
      "credential_id" text primary key references "passkey" ("credential_id") on delete cascade,
      "sealed_private_key" bytea not null,
      "sign_count" bigint not null check ("sign_count" >= 0))`);
  }
}

export const createPasskeys = { name: "0002_passkeys", class: CreatePasskeys };
