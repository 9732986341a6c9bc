import { describe, expect, test } from "vitest";
import { clientAddress, rateLimitedAddress } from "../src/http/client-address.ts";
import { blockedBody, primaryBucket, rateLimitHeaders } from "../src/rate-limits/rate-limit-report.ts";
import { type BucketState, type RateDecision, windowOf } from "../src/rate-limits/rate-limiter.ts";
import { tiers } from "../src/rate-limits/rate-tiers.ts";

const bucket = (
  name: BucketState["name"],
  limit: number,
  remaining: number,
  resetIn: number,
  full = false,
): BucketState => ({
  name,
  limit,
  remaining,
  resetIn,
  ...(name === "in_flight" ? {} : { windowSeconds: { per_minute: 60, per_ip: 60, hourly: 3600, daily: 86400 }[name] }),
  full,
});

describe("windows", () => {
  test("are fixed, aligned to the epoch: the minute on the minute, the day at 00:00 UTC", () => {
    const now = new Date("2026-10-20T12:00:03.500Z");
    expect(windowOf(now, 60)).toEqual({
      start: Date.parse("2026-10-20T12:00:00Z"),
      end: Date.parse("2026-10-20T12:01:00Z"),
    });
    expect(windowOf(now, 10)).toEqual({
      start: Date.parse("2026-10-20T12:00:00Z"),
      end: Date.parse("2026-10-20T12:00:10Z"),
    });
    expect(windowOf(now, 86_400)).toEqual({
      start: Date.parse("2026-10-20T00:00:00Z"),
      end: Date.parse("2026-10-21T00:00:00Z"),
    });
    expect(windowOf(new Date("2026-10-20T12:01:00Z"), 60).start).toBe(Date.parse("2026-10-20T12:01:00Z"));
  });
});

describe("primary bucket", () => {
  test("is the one with the fewest requests left, the later reset breaking a tie, never a free in_flight", () => {
    const allowed: RateDecision = {
      allowed: true,
      buckets: [
        bucket("per_minute", 30, 5, 7),
        bucket("hourly", 300, 5, 3000),
        bucket("daily", 2000, 1900, 40000),
        bucket("in_flight", 10, 1, 1),
      ],
    };
    expect(primaryBucket(allowed).name).toBe("hourly");
  });

  test("on a block, is the refusing bucket with the latest reset: when a retry can pass", () => {
    const blocked: RateDecision = {
      allowed: false,
      buckets: [
        bucket("per_minute", 30, 0, 7, true),
        bucket("hourly", 300, 0, 3000, true),
        bucket("daily", 2000, 1, 40000),
        bucket("in_flight", 10, 0, 1, true),
      ],
    };
    expect(primaryBucket(blocked).name).toBe("hourly");
    const concurrent: RateDecision = {
      allowed: false,
      buckets: [bucket("per_minute", 30, 12, 7), bucket("in_flight", 10, 0, 1, true)],
    };
    expect(primaryBucket(concurrent).name).toBe("in_flight");
    expect(blockedBody(tiers.secretDevelopment, concurrent, "https://u.test").data).toMatchObject({
      error: { reason: "concurrent", bucket: "in_flight", retry_in: 1 },
    });
  });
});

describe("RateLimit header fields", () => {
  test("one quota policy per windowed bucket, as structured-field lists; in_flight is left out", () => {
    const decision: RateDecision = {
      allowed: true,
      buckets: [bucket("per_minute", 120, 119, 57), bucket("per_ip", 20, 19, 57), bucket("in_flight", 10, 9, 1)],
    };
    expect(rateLimitHeaders(decision)).toEqual({
      "ratelimit-policy": '"per_minute";q=120;w=60, "per_ip";q=20;w=60',
      ratelimit: '"per_minute";r=119;t=57, "per_ip";r=19;t=57',
    });
  });
});

describe("client address", () => {
  test("is the socket's peer unless proxies are trusted, then the entry the outermost trusted proxy saw", () => {
    expect(clientAddress("::ffff:10.0.0.5", "203.0.113.9", 0)).toBe("10.0.0.5");
    expect(clientAddress("10.0.0.5", "198.51.100.1, 203.0.113.9", 1)).toBe("203.0.113.9");
    expect(clientAddress("10.0.0.5", "198.51.100.1, 203.0.113.9", 2)).toBe("198.51.100.1");
    expect(clientAddress("10.0.0.5", "203.0.113.9", 3)).toBe("203.0.113.9");
    expect(clientAddress("10.0.0.5", ["198.51.100.1", "2001:DB8::1"], 1)).toBe("2001:db8::1");
  });

  test("a header entry that is not an address is not believed", () => {
    expect(clientAddress("10.0.0.5", "evil space, <script>", 1)).toBe("10.0.0.5");
    expect(clientAddress("10.0.0.5", "", 1)).toBe("10.0.0.5");
    expect(clientAddress(undefined, undefined, 0)).toBe("unknown");
  });
});

describe("the address a per-IP bucket counts", () => {
  test("is an IPv6 address's /64, however it is written", () => {
    expect(rateLimitedAddress("2001:db8:1:2::7")).toBe("2001:db8:1:2::/64");
    expect(rateLimitedAddress("2001:0db8:0001:0002:ffff:ffff:ffff:ffff")).toBe("2001:db8:1:2::/64");
    expect(rateLimitedAddress("2001:db8::1")).toBe("2001:db8:0:0::/64");
    expect(rateLimitedAddress("1::2:3:4:5:6:7")).toBe("1:0:2:3::/64");
    expect(rateLimitedAddress("::1")).toBe("0:0:0:0::/64");
    expect(rateLimitedAddress("fe80::1%eth0")).toBe("fe80:0:0:0::/64");
    expect(rateLimitedAddress("64:ff9b::192.0.2.1")).toBe("64:ff9b:0:0::/64");
  });

  test("puts two addresses of one /64 in one bucket, and of two /64s in two", () => {
    expect(rateLimitedAddress("2001:db8:1:2::1")).toBe(rateLimitedAddress("2001:db8:1:2:aaaa:bbbb:cccc:dddd"));
    expect(rateLimitedAddress("2001:db8:1:2::1")).not.toBe(rateLimitedAddress("2001:db8:1:3::1"));
  });

  test("keeps IPv4 and IPv4-mapped IPv6 per address", () => {
    expect(rateLimitedAddress("203.0.113.9")).toBe("203.0.113.9");
    expect(rateLimitedAddress(clientAddress("::ffff:203.0.113.9", undefined, 0))).toBe("203.0.113.9");
    expect(rateLimitedAddress(clientAddress("::ffff:cb00:7109", undefined, 0))).toBe("203.0.113.9");
    expect(rateLimitedAddress(clientAddress("::ffff:203.0.113.10", undefined, 0))).toBe("203.0.113.10");
    expect(rateLimitedAddress("unknown")).toBe("unknown");
  });
});
