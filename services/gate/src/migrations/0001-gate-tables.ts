import { Migration } from "@svc/platform";

export class CreateGateTables extends Migration {
  override up(): void {
    this.addSql(`create table "gates" (
      "id" uuid primary key,
      "organization_id" uuid not null,
      "environment" text not null check ("environment" in ('development', 'production')),
      "key" text not null,
      "type" text not null check ("type" in ('human', 'age')),
      "age_threshold" integer null check ("age_threshold" between 1 and 150),
      "status" text not null check ("status" in ('draft', 'active', 'archived')),
      "notarize_offer" boolean not null default false,
      "created_at" timestamptz not null,
      "updated_at" timestamptz not null,
      unique ("organization_id", "environment", "key"),
      check (("type" = 'age') = ("age_threshold" is not null)))`);

    this.addSql(`create table "sessions" (
      "id" uuid primary key,
      "token_hash" bytea not null unique,
      "organization_id" uuid not null,
      "environment" text not null,
      "credential_id" text not null,
      "credential_kind" text not null check ("credential_kind" in ('secret_key', 'site_key')),
      "partner_user_hash" bytea null,
      "metadata" jsonb null,
      "allowed_gates" text[] not null default '{}',
      "created_at" timestamptz not null,
      "expires_at" timestamptz not null,
      "consumed_at" timestamptz null,
      "revoked_at" timestamptz null,
      "request_id" text null)`);
    this.addSql(`create index "sessions_by_expiry" on "sessions" ("expires_at")`);

    this.addSql(`create table "requests" (
      "id" text primary key,
      "organization_id" uuid not null,
      "environment" text not null,
      "gate_key" text not null,
      "gate_type" text not null,
      "age_threshold" integer null,
      "session_id" uuid not null,
      "status" text not null check ("status" in ('pending', 'completed', 'failed', 'expired', 'pass')),
      "flow_secret_hash" bytea not null,
      "blocking_user_hash" bytea null,
      "partner_ref_hash" bytea null,
      "partner_ref_sealed" bytea null,
      "svc_user_id" uuid null,
      "human_id" uuid null,
      "mode" text not null,
      "sdk_type" text not null,
      "notarize_offered" boolean not null,
      "return_url" text null,
      "parent_request_id" text null,
      "metadata" jsonb null,
      "pushed_to_devices" integer not null default 0,
      "created_at" timestamptz not null,
      "expires_at" timestamptz not null,
      "opened_at" timestamptz null,
      "ended_at" timestamptz null,
      "ended_by" text null,
      "trusted" boolean null,
      "first_time" boolean null,
      "age_verdict" text null,
      "failure_reason" text null,
      "token" text null,
      "token_expires_at" timestamptz null,
      "event_sent" boolean not null default false)`);
    this.addSql(
      `create index "requests_blocking" on "requests" ("organization_id", "environment", "gate_key", "blocking_user_hash") where "status" = 'pending'`,
    );
    this.addSql(`create index "requests_due" on "requests" ("expires_at") where "status" = 'pending'`);
    this.addSql(
      `create index "requests_presence_by_ref" on "requests" ("organization_id", "environment", "gate_key", "partner_ref_hash", "ended_at") where "status" = 'completed'`,
    );
    this.addSql(
      `create index "requests_presence_by_human" on "requests" ("organization_id", "environment", "gate_key", "human_id", "ended_at") where "status" = 'completed'`,
    );
  }
}
