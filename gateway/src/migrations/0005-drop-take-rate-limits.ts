import { Migration } from "@svc/platform";

/**
 * `take_rate_limits` (0002) was replaced on the request path by `decide_rate_limits` (0004, now
 * `rate-limits/decide-rate-limits.sql`) and kept only for replicas of the release before it; no
 * release since calls it.
 */
export class DropTakeRateLimits extends Migration {
  override up(): void {
    this.addSql(`drop function if exists "take_rate_limits"`);
  }
}
