import { Migration } from "@svc/platform";

/** A new binding is a notice in the person's inbox until they dismiss it (binding/binding-notices.ts). */
class AddBindingNotices extends Migration {
  override up(): void {
    this.addSql(`alter table "binding" add column "notice_dismissed_at" timestamptz null`);
    this.addSql(
      `create index "binding_open_notices" on "binding" ("svc_user_id", "bound_at") where "unbound_at" is null and "notice_dismissed_at" is null`,
    );
  }
}

export const addBindingNotices = { name: "0005_binding_notices", class: AddBindingNotices };
