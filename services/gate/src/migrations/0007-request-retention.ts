import { Migration } from "@svc/platform";

/**
 * Retention (`retention.ts`) finds ended requests by when they ended. A pending request has no end yet
 * and is left out, so the index holds only what retention will one day delete. (`sessions_by_expiry`
 * of 0001 already serves sessions.)
 */
export class RequestRetention extends Migration {
  override up(): void {
    this.addSql(`create index "requests_by_end" on "requests" ("ended_at") where "ended_at" is not null`);
  }
}
