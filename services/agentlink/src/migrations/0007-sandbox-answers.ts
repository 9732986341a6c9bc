import { Migration } from "@svc/platform";

/**
 * A sandbox human's answer is durable (`confirmations/sandbox-answers.ts`): a card of the development
 * environment records, in the statement that creates it, from when the sandbox sweep may answer it for
 * a sandbox human. The sweep reads queued cards by that instant; nothing else is in the index, so in a
 * production deployment (which never honours sandbox humans) it stays empty.
 */
class SandboxAnswers extends Migration {
  override up(): void {
    this.addSql(`alter table "card" add column "sandbox_answer_at" timestamptz null`);
    this.addSql(
      `create index "card_sandbox_due" on "card" ("sandbox_answer_at") where "status" = 'queued' and "sandbox_answer_at" is not null`,
    );
  }
}

export const sandboxAnswers = { name: "0007_sandbox_answers", class: SandboxAnswers };
