import { Migration } from "@svc/platform";

class PersonSide extends Migration {
  override up(): void {
    // A deleted person's links stay for the partner's list, with the person's id erased; only an
    // ended link can have lost its person.
    this.addSql(`alter table "account_link" alter column "svc_user_id" drop not null`);
    this.addSql(
      `alter table "account_link" add constraint "account_link_person_kept_while_active" check ("svc_user_id" is not null or "status" = 'unlinked')`,
    );
    // The handle is now derived from the person and the platform, so a relink carries it again: unique
    // among active links only (rows of one person's earlier links share it).
    this.addSql(`alter table "account_link" drop constraint "account_link_organization_id_environment_handle_key"`);
    this.addSql(
      `create unique index "account_link_active_handle" on "account_link" ("organization_id", "environment", "handle") where "status" = 'active'`,
    );
    this.addSql(`create index "account_link_by_human" on "account_link" ("svc_user_id", "secured_at" desc)`);
    // What the person is told about their links (partner revoked, re-link offered).
    this.addSql(`create table "notice" (
      "id" uuid primary key,
      "svc_user_id" uuid not null references "human" ("id") on delete cascade,
      "kind" text not null check ("kind" in ('account_revoked', 'relink_offer')),
      "link_id" uuid not null references "account_link" ("id"),
      "at" timestamptz not null)`);
    this.addSql(`create index "notice_by_human" on "notice" ("svc_user_id", "at" desc)`);
  }
}

export const addPersonSide = { name: "0007_person_side", class: PersonSide };
