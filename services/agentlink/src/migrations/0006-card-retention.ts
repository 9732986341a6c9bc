import { Migration } from "@svc/platform";

/**
 * Retention (`proposals/retention.ts`) finds ended cards by when they ended, and a card's audit rows go
 * with it: the foreign key now cascades (found by `card_audit_card`, which leads with the card).
 */
class CardRetention extends Migration {
  override up(): void {
    this.addSql(`create index "card_by_resolution" on "card" ("resolved_at") where "resolved_at" is not null`);
    this.addSql(`alter table "card_audit" drop constraint "card_audit_card_id_fkey"`);
    this.addSql(
      `alter table "card_audit" add constraint "card_audit_card_id_fkey" foreign key ("card_id") references "card" ("id") on delete cascade`,
    );
  }
}

export const cardRetention = { name: "0006_card_retention", class: CardRetention };
