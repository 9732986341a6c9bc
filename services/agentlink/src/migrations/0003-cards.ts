import { Migration } from "@svc/platform";

class CreateCards extends Migration {
  override up(): void {
    this.addSql(`create table "card" (
      "id" uuid primary key,
      "agent_id" uuid not null references "agent" ("id"),
      "request_id" uuid not null,
      "svc_user_id" uuid not null,
      "summary_title" text not null,
      "category" text not null,
      "canonical_card" text not null,
      "card_digest" text not null,
      "status" text not null check ("status" in ('queued', 'approved', 'denied', 'cancelled', 'expired')),
      "ttl_at" timestamptz not null,
      "created_at" timestamptz not null,
      "resolved_at" timestamptz null,
      check (("status" = 'queued') = ("resolved_at" is null)),
      unique ("agent_id", "request_id"))`);
    this.addSql(`create index "card_queued_ttl" on "card" ("ttl_at") where "status" = 'queued'`);
    this.addSql(`create index "card_person_queued" on "card" ("svc_user_id") where "status" = 'queued'`);
    this.addSql(`create table "card_audit" (
      "id" bigserial primary key,
      "card_id" uuid not null references "card" ("id"),
      "action" text not null,
      "actor" text not null,
      "at" timestamptz not null,
      "detail" jsonb null)`);
    this.addSql(`create index "card_audit_card" on "card_audit" ("card_id", "id")`);
  }
}

export const createCards = { name: "0003_cards", class: CreateCards };
