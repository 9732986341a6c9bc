import { Migration } from "@svc/platform";

class CreateBindings extends Migration {
  override up(): void {
    this.addSql(`create table "bind_session" (
      "link_code" text primary key check ("link_code" ~ '^[2-9A-HJKMNP-Z]{8}$'),
      "agent_id" uuid not null references "agent" ("id"),
      "created_at" timestamptz not null,
      "expires_at" timestamptz not null,
      "claimed_at" timestamptz null,
      "svc_user_id" uuid null,
      check (("claimed_at" is null) = ("svc_user_id" is null)))`);
    this.addSql(`create table "binding" (
      "id" uuid primary key,
      "agent_id" uuid not null references "agent" ("id"),
      "svc_user_id" uuid not null,
      "opaque_id_lookup" text not null,
      "bound_at" timestamptz not null,
      "unbound_at" timestamptz null)`);
    // One active binding per agent and person; the database decides between concurrent claims.
    this.addSql(
      `create unique index "binding_active" on "binding" ("agent_id", "svc_user_id") where "unbound_at" is null`,
    );
    this.addSql(`create index "binding_opaque_id_lookup" on "binding" ("agent_id", "opaque_id_lookup")`);
    this.addSql(`create index "binding_person" on "binding" ("svc_user_id") where "unbound_at" is null`);
  }
}

export const createBindings = { name: "0002_bindings", class: CreateBindings };
