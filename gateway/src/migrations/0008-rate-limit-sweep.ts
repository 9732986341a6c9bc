import { Migration } from "@svc/platform";

/**
 * The sweep of ended windows and expired leases (rate-limiter.ts `sweep`) reads only what is due.
 *
 * `rate_counters` was built without a secondary index so that each take is a HOT update (0002). This
 * index keeps that: HOT is lost only when an indexed column's value changes, and the take's upsert
 * sets `expires_at = greatest(c.expires_at, excluded.expires_at)`, where both are the end of the same
 * epoch-aligned fixed window, so the value stays the same on every take but the first of a new window
 * (once per counter per window: one index entry a minute for the busiest bucket). `count`, which every
 * take changes, stays unindexed.
 */
export class IndexRateLimitExpiry extends Migration {
  override up(): void {
    this.addSql(`create index "rate_counters_by_expiry" on "rate_counters" ("expires_at")`);
    // Leases are inserted and deleted, never updated: nothing here concerns HOT.
    this.addSql(`create index "rate_leases_by_expiry" on "rate_leases" ("expires_at")`);
  }
}
