import { Migration } from "@svc/platform";

/**
 * Quorum cards (decisions.md, "Quorum approvals"): the card keeps its thresholds (both null for a card
 * to one person, whose `svc_user_id` is its person; a quorum card's is its first approver), and each
 * approver has a row that records their one decision. The primary key keeps an approver to one row, the
 * checks keep a decision whole; the card's row lock taken by every decision makes exactly one of them
 * resolve it.
 */
class Quorum extends Migration {
  override up(): void {
    this.addSql(`alter table "card"
      add column "quorum_approve" smallint null check ("quorum_approve" between 1 and 10),
      add column "quorum_deny" smallint null check ("quorum_deny" between 1 and 10),
      add check (("quorum_approve" is null) = ("quorum_deny" is null))`);
    this.addSql(`create table "card_approver" (
      "card_id" uuid not null references "card" ("id") on delete cascade,
      "svc_user_id" uuid not null,
      "position" smallint not null,
      "verdict" text null check ("verdict" in ('approve', 'denied')),
      "ceremony_id" uuid null,
      "decided_at" timestamptz null,
      "amr" text null check ("amr" in ('passkey', 'sandbox')),
      primary key ("card_id", "svc_user_id"),
      unique ("card_id", "position"),
      check (("verdict" is null) = ("decided_at" is null)),
      check (("verdict" is null) = ("ceremony_id" is null)),
      check (("verdict" is null) = ("amr" is null)))`);
    this.addSql(`create index "card_approver_undecided" on "card_approver" ("svc_user_id") where "verdict" is null`);
    this.addSql(
      `create index "card_approver_ceremony" on "card_approver" ("ceremony_id") where "ceremony_id" is not null`,
    );
  }
}

export const quorum = { name: "0008_quorum", class: Quorum };
