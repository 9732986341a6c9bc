import { Migration } from "@svc/platform";

/**
 * Each counter keeps the limit the statement that last counted it judged it by
 * (`rate-limits/count-statement.ts`), so that statement reads the verdict from the rows it upserts rather
 * than joining them back to what it asked. Only the statement that writes it reads it; `decide_rate_limits`
 * leaves it as it was. Not indexed, so a take stays a HOT update; nullable, so adding it rewrites nothing.
 */
export class AddRateCounterLimits extends Migration {
  override up(): void {
    this.addSql(`alter table "rate_counters" add column "limit" integer`);
  }
}
