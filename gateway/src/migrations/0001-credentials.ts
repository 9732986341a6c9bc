import { Migration } from "@svc/platform";

export class CreateCredentialTables extends Migration {
  override up(): void {
    this.addSql(`create table "organizations" (
      "id" uuid primary key,
      "name" text not null,
      "created_at" timestamptz not null)`);
    this.addSql(`create table "api_keys" (
      "id" uuid primary key,
      "organization_id" uuid not null references "organizations" ("id"),
      "environment" text not null check ("environment" in ('development', 'production')),
      "type" text not null check ("type" in ('secret', 'site')),
      "key_hash" bytea not null unique,
      "display_prefix" text not null,
      "allowed_origins" text[] not null default '{}',
      "allowed_gates" text[] not null default '{}',
      "created_at" timestamptz not null,
      "expires_at" timestamptz null,
      "revoked_at" timestamptz null,
      check ("type" = 'secret' or cardinality("allowed_origins") > 0))`);
    this.addSql(`create index "api_keys_by_organization" on "api_keys" ("organization_id", "created_at")`);
  }
}
