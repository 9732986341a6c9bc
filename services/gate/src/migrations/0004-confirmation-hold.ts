import { Migration } from "@svc/platform";

/**
 * A confirmation under way holds its request's window (requests/request-lifecycle.ts): the instant
 * until which a confirmation that began inside the window may still complete it.
 */
export class ConfirmationHold extends Migration {
  override up(): void {
    this.addSql(`alter table "requests" add column "confirming_until" timestamptz null`);
  }
}
