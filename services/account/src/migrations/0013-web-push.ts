import { Migration } from "@svc/platform";

class AddWebPush extends Migration {
  override up(): void {
    // The development deployment's VAPID pair, made once (src/push/vapid-keys.ts); production configures its own.
    this.addSql(`create table "vapid_key" (
      "id" smallint primary key check ("id" = 1),
      "public_key" text not null,
      "sealed_private_key" bytea not null,
      "created_at" timestamptz not null)`);
    // A browser's PushSubscription: the endpoint is a capability, so it and the keys are sealed; the keyed
    // hash of the endpoint finds a subscription registered again, and the host is what the person is shown.
    this.addSql(`create table "push_subscription" (
      "id" uuid primary key,
      "svc_user_id" uuid not null references "human" ("id") on delete cascade,
      "endpoint_hash" bytea not null unique,
      "sealed" bytea not null,
      "push_host" text not null,
      "created_at" timestamptz not null,
      "last_pushed_at" timestamptz null)`);
    this.addSql(`create index "push_subscription_by_human" on "push_subscription" ("svc_user_id", "created_at")`);
    // One push of one item to one subscription: the primary key makes a repeated trigger a no-op.
    this.addSql(`create table "push_job" (
      "subscription_id" uuid not null references "push_subscription" ("id") on delete cascade,
      "topic" text not null,
      "payload" jsonb not null,
      "urgency" text not null check ("urgency" in ('normal', 'high')),
      "expires_at" timestamptz not null,
      "attempts" integer not null default 0,
      "next_attempt_at" timestamptz not null,
      "sent_at" timestamptz null,
      primary key ("subscription_id", "topic"))`);
    this.addSql(`create index "push_job_due" on "push_job" ("next_attempt_at") where "sent_at" is null`);
    this.addSql(`create index "push_job_expiry" on "push_job" ("expires_at")`);
  }
}

export const addWebPush = { name: "0013_web_push", class: AddWebPush };
