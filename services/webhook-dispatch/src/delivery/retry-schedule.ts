/**
 * When a failed delivery is tried again. The schedule lists the delay before each attempt (the first
 * is normally 0: at once); its length is the number of attempts. Delays get a random spread so that
 * the deliveries of one outage do not all come back in the same second, and a receiver's
 * `Retry-After` can push an attempt later (never earlier), up to a bound.
 */
export interface RetryPolicy {
  /** Milliseconds before attempt 1, 2, … */
  schedule: readonly number[];
  /** Spread as a fraction of each delay: 0.2 puts a 5-minute retry anywhere in 4 to 6 minutes. */
  jitter: number;
  /** The longest wait a `Retry-After` can ask for. */
  retryAfterMaxMs: number;
}

export const defaultRetrySchedule = ["0", "5s", "5m", "30m", "2h", "5h", "10h", "10h"];

/**
 * The wait before the next attempt after `attemptsMade` attempts of the current schedule failed, or
 * null when the schedule is used up and the message is failed.
 */
export function nextAttemptDelay(
  policy: RetryPolicy,
  attemptsMade: number,
  options: { retryAfterMs?: number; random?: () => number } = {},
): number | null {
  const base = policy.schedule[attemptsMade];
  if (base === undefined) return null;
  const random = options.random ?? Math.random;
  const spread = Math.round(base * policy.jitter * (2 * random() - 1));
  const scheduled = base + spread;
  if (options.retryAfterMs === undefined) return scheduled;
  return Math.max(scheduled, Math.min(options.retryAfterMs, policy.retryAfterMaxMs));
}

/** `Retry-After` as delay-seconds or an HTTP date (RFC 9110 §10.2.3); anything else is ignored. */
export function parseRetryAfter(header: string | undefined, now: Date): number | undefined {
  if (header === undefined) return undefined;
  const value = header.trim();
  if (/^\d+$/.test(value)) return Number(value) * 1000;
  const at = Date.parse(value);
  if (Number.isNaN(at) || !/[a-z]/i.test(value)) return undefined;
  return Math.max(0, at - now.getTime());
}
