import { Migration } from "@svc/platform";

class CreateAgents extends Migration {
  override up(): void {
    this.addSql(`create table "agent" (
      "id" uuid primary key,
      "organization_id" text not null,
      "environment" text not null check ("environment" in ('development', 'production')),
      "name" text not null check ("name" ~ '^[A-Za-z0-9_-]{3,40}$'),
      "display_name" text not null,
      "avatar_asset" text null,
      "categories" text[] not null check (cardinality("categories") > 0),
      "callback_url" text null,
      "callback_secret_sealed" bytea null,
      "status" text not null check ("status" in ('active', 'revoked')),
      "created_at" timestamptz not null,
      "revoked_at" timestamptz null,
      check (("callback_url" is null) = ("callback_secret_sealed" is null)),
      check (("status" = 'revoked') = ("revoked_at" is not null)),
      unique ("organization_id", "environment", "name"))`);
    // Authentication reads an agent by the name in its key, across organizations and environments.
    this.addSql(`create index "agent_name" on "agent" ("name")`);
    this.addSql(`create table "agent_key" (
      "id" uuid primary key,
      "agent_id" uuid not null references "agent" ("id"),
      "secret_hash" bytea not null,
      "created_at" timestamptz not null,
      "expires_at" timestamptz null)`);
    this.addSql(`create index "agent_key_agent" on "agent_key" ("agent_id")`);
  }
}

export const createAgents = { name: "0001_agents", class: CreateAgents };
