import { parse } from "@svc/platform";
import { describe, expect, it } from "vitest";
import {
  defaultRetrySchedule,
  nextAttemptDelay,
  parseRetryAfter,
  type RetryPolicy,
} from "../src/delivery/retry-schedule.ts";

const minute = 60_000;
const hour = 60 * minute;
const policy: RetryPolicy = { schedule: defaultRetrySchedule.map(parse.duration), jitter: 0, retryAfterMaxMs: hour };

describe("retry schedule", () => {
  it("by default: at once, then 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h, then failed", () => {
    const delays = Array.from({ length: 9 }, (_, made) => nextAttemptDelay(policy, made));
    expect(delays).toEqual([0, 5000, 5 * minute, 30 * minute, 2 * hour, 5 * hour, 10 * hour, 10 * hour, null]);
  });

  it("spreads each delay by the jitter fraction, both ways, and never the immediate first attempt", () => {
    const jittered = { ...policy, jitter: 0.2 };
    expect(nextAttemptDelay(jittered, 2, { random: () => 0 })).toBe(4 * minute);
    expect(nextAttemptDelay(jittered, 2, { random: () => 1 })).toBe(6 * minute);
    expect(nextAttemptDelay(jittered, 2, { random: () => 0.5 })).toBe(5 * minute);
    expect(nextAttemptDelay(jittered, 0, { random: () => 1 })).toBe(0);
  });

  it("a Retry-After pushes the attempt later, never earlier, and never past the bound", () => {
    expect(nextAttemptDelay(policy, 1, { retryAfterMs: 120_000 })).toBe(120_000);
    expect(nextAttemptDelay(policy, 1, { retryAfterMs: 1000 })).toBe(5000);
    expect(nextAttemptDelay(policy, 1, { retryAfterMs: 3 * hour })).toBe(hour);
    expect(nextAttemptDelay(policy, 5, { retryAfterMs: 3 * hour })).toBe(5 * hour);
    expect(nextAttemptDelay(policy, 8, { retryAfterMs: 1000 })).toBeNull();
  });

  it("reads Retry-After as seconds or as an HTTP date, and ignores anything else", () => {
    const now = new Date("2026-11-22T10:00:00Z");
    expect(parseRetryAfter("120", now)).toBe(120_000);
    expect(parseRetryAfter("Sun, 22 Nov 2026 10:02:30 GMT", now)).toBe(150_000);
    expect(parseRetryAfter("Sun, 22 Nov 2026 09:00:00 GMT", now)).toBe(0);
    expect(parseRetryAfter("soon", now)).toBeUndefined();
    expect(parseRetryAfter("1.5", now)).toBeUndefined();
    expect(parseRetryAfter(undefined, now)).toBeUndefined();
  });
});
