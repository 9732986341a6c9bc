import { Migration } from "@svc/platform";

/**
 * A sandbox human's answer is durable (`src/ceremony/sandbox.ts`): the request records, in the statement
 * that creates it, how its sandbox human answers and from when the sandbox sweep may answer for them.
 * The sweep reads pending requests by that instant; everything else is left out of the index, so in a
 * production deployment (which never honours sandbox humans) it stays empty.
 */
export class SandboxAnswers extends Migration {
  override up(): void {
    this.addSql(
      `alter table "requests" add column "sandbox_behavior" text null check ("sandbox_behavior" in ('confirm', 'decline'))`,
    );
    this.addSql(`alter table "requests" add column "sandbox_answer_at" timestamptz null`);
    this.addSql(`alter table "requests" add check (("sandbox_behavior" is null) = ("sandbox_answer_at" is null))`);
    this.addSql(
      `create index "requests_sandbox_due" on "requests" ("sandbox_answer_at") where "status" = 'pending' and "sandbox_answer_at" is not null`,
    );
  }
}
