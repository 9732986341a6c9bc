import { Migration } from "@svc/platform";

export class CreateWebhookTables extends Migration {
  override up(): void {
    this.addSql(`create table "endpoints" (
      "id" text primary key,
      "organization_id" text not null,
      "url" text not null,
      "types" text[] not null default '{}',
      "status" text not null check ("status" in ('enabled', 'disabled')),
      "disabled_reason" text null,
      "disabled_at" timestamptz null,
      "failing_since" timestamptz null,
      "secret_version" integer not null,
      "secret_sealed" bytea not null,
      "previous_secret_sealed" bytea null,
      "previous_secret_expires_at" timestamptz null,
      "created_at" timestamptz not null,
      check (("status" = 'disabled') = ("disabled_at" is not null)))`);
    this.addSql(`create index "endpoints_by_organization" on "endpoints" ("organization_id", "created_at")`);

    this.addSql(`create table "messages" (
      "id" text primary key,
      "seq" bigint generated always as identity unique,
      "organization_id" text not null,
      "dedup_key" text not null unique,
      "type" text not null,
      "environment" text null check ("environment" in ('development', 'production')),
      "occurred_at" timestamptz null,
      "body" bytea not null,
      "received_at" timestamptz not null)`);
    // Newest first by arrival order: several messages of one batch share their received_at.
    this.addSql(`create index "messages_by_organization" on "messages" ("organization_id", "seq" desc)`);

    this.addSql(`create table "deliveries" (
      "id" bigserial primary key,
      "message_id" text not null references "messages" ("id") on delete cascade,
      "endpoint_id" text not null references "endpoints" ("id") on delete cascade,
      "status" text not null check ("status" in ('pending', 'delivered', 'failed')),
      "attempts" integer not null default 0,
      "schedule_step" integer not null default 0,
      "next_attempt_at" timestamptz null,
      "last_attempt_at" timestamptz null,
      "last_status_code" integer null,
      "last_error" text null,
      "delivered_at" timestamptz null,
      "created_at" timestamptz not null,
      unique ("message_id", "endpoint_id"),
      check (("status" = 'pending') = ("next_attempt_at" is not null)))`);
    // The worker's claim walks each endpoint's due deliveries in order through this index.
    this.addSql(
      `create index "deliveries_due" on "deliveries" ("endpoint_id", "next_attempt_at", "id") where "status" = 'pending'`,
    );
    this.addSql(`create index "deliveries_by_endpoint" on "deliveries" ("endpoint_id", "message_id")`);
  }
}
