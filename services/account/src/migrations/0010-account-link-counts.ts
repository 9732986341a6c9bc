import { Migration } from "@svc/platform";

/** Slots per (organization, environment, status) count; see the trigger below. */
const countSlots = 8;

class CountAccountLinks extends Migration {
  override up(): void {
    // The list filtered by status walks this index in page order instead of filtering the whole
    // platform's range of `account_link_listing` (0006).
    this.addSql(
      `create index "account_link_listing_by_status" on "account_link" ("organization_id", "environment", "status", "secured_at" desc, "id" desc)`,
    );
    // `total` of the list (decisions.md "total of list-secured-accounts"): links per platform and
    // status, kept in the transaction of each link change. A count is the sum of its slots' deltas; a
    // change adds to a random slot, so concurrent secures of one big partner do not queue on one row
    // lock until commit. A slot may go negative; only the sum means anything.
    this.addSql(`create table "account_link_count" (
      "organization_id" text not null,
      "environment" text not null,
      "status" text not null,
      "slot" smallint not null,
      "n" bigint not null,
      primary key ("organization_id", "environment", "status", "slot"))`);
    // A trigger rather than a statement beside each write, so that no path that changes a link (secure,
    // every unlink through endLinks, deleting the person, a future retention or a console fix by hand)
    // can leave the count behind. `search_path from current` pins the function to this schema.
    this.addSql(`create function "account_link_count_change"() returns trigger
      language plpgsql set search_path from current as $fn$
      declare
        v_slot smallint := floor(random() * ${countSlots});
      begin
        if tg_op = 'UPDATE' and old.status = new.status and old.organization_id = new.organization_id
           and old.environment = new.environment then
          return null;
        end if;
        if tg_op in ('UPDATE', 'DELETE') then
          insert into account_link_count as c (organization_id, environment, status, slot, n)
            values (old.organization_id, old.environment, old.status, v_slot, -1)
            on conflict (organization_id, environment, status, slot) do update set n = c.n - 1;
        end if;
        if tg_op in ('UPDATE', 'INSERT') then
          insert into account_link_count as c (organization_id, environment, status, slot, n)
            values (new.organization_id, new.environment, new.status, v_slot, 1)
            on conflict (organization_id, environment, status, slot) do update set n = c.n + 1;
        end if;
        return null;
      end
      $fn$`);
    this.addSql(`create trigger "account_link_counted" after insert or update or delete on "account_link"
      for each row execute function "account_link_count_change"()`);
    // The links that exist already, counted once. Creating the trigger locked the table against writes
    // until this migration commits, so no link changes between the trigger and this count.
    this.addSql(`insert into "account_link_count" (organization_id, environment, status, slot, n)
      select organization_id, environment, status, 0, count(*) from "account_link" group by 1, 2, 3`);
  }
}

export const countAccountLinks = { name: "0010_account_link_counts", class: CountAccountLinks };
