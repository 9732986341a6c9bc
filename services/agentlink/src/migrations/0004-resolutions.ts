import { Migration } from "@svc/platform";

/**
 * What a confirmation leaves on its card (its verdict, the ceremony shared by one confirm, the resolution
 * and its proof), how the agent named the person (the proof's `sub` is the opaque_id only when it was
 * named by one), and the trust layer's warnings, which the person sees as a caution.
 */
class AddResolutions extends Migration {
  override up(): void {
    this.addSql(`alter table "card"
      add column "named_by" text not null default 'svc_user_id' check ("named_by" in ('opaque_id', 'svc_user_id', 'user_email')),
      add column "warnings" jsonb not null default '[]',
      add column "verdict" text null check ("verdict" in ('approve', 'denied')),
      add column "ceremony_id" uuid null,
      add column "resolution_id" uuid null unique,
      add column "resolution_jwt" text null,
      add check (("verdict" is not null) = ("status" in ('approved', 'denied'))),
      add check (("verdict" is null) = ("resolution_jwt" is null))`);
    this.addSql(`alter table "card" alter column "named_by" drop default`);
    this.addSql(`create index "card_ceremony" on "card" ("ceremony_id") where "ceremony_id" is not null`);
  }
}

export const addResolutions = { name: "0004_resolutions", class: AddResolutions };
