import type { RawRoute } from "../http/raw-route.ts";
import type { BucketState, RateDecision } from "./rate-limiter.ts";
import type { RateTier } from "./rate-tiers.ts";

/** How partners read a decision: `_rateLimit`, the IETF RateLimit header fields, and the blocked body. */

interface BucketReport {
  limit: number;
  remaining: number;
  resetIn: number;
}

export interface RateLimitReport {
  scope: string;
  primary: BucketReport & { bucket: string };
  buckets: Record<string, BucketReport>;
}

/**
 * The most constrained bucket: the one with the fewest requests left (it refuses first), the later
 * reset breaking a tie. On a block, only the buckets that refused compete, so `primary.resetIn` is when
 * a retry can pass. in_flight is primary only when it refused: a free slot says nothing about the rate.
 */
export function primaryBucket(decision: RateDecision): BucketState {
  const candidates = decision.allowed
    ? decision.buckets.filter((b) => b.name !== "in_flight")
    : decision.buckets.filter((b) => b.full);
  const pool = candidates.length > 0 ? candidates : decision.buckets;
  return pool.reduce((best, b) =>
    b.remaining < best.remaining || (b.remaining === best.remaining && b.resetIn > best.resetIn) ? b : best,
  );
}

const reportOf = (b: BucketState): BucketReport => ({ limit: b.limit, remaining: b.remaining, resetIn: b.resetIn });

export function rateLimitReport(tier: RateTier, decision: RateDecision): RateLimitReport {
  const primary = primaryBucket(decision);
  return {
    scope: tier.scope,
    primary: { bucket: primary.name, ...reportOf(primary) },
    buckets: Object.fromEntries(decision.buckets.map((b) => [b.name, reportOf(b)])),
  };
}

/**
 * `RateLimit-Policy` and `RateLimit` (draft-ietf-httpapi-ratelimit-headers, structured-field lists):
 * one quota policy per windowed bucket, named as in `_rateLimit`. in_flight is a concurrency cap, not a
 * quota over a window, so the fields leave it out.
 */
export function rateLimitHeaders(decision: RateDecision): Record<string, string> {
  const windowed = decision.buckets.filter((b) => b.windowSeconds !== undefined);
  return {
    "ratelimit-policy": windowed.map((b) => `"${b.name}";q=${b.limit};w=${b.windowSeconds}`).join(", "),
    ratelimit: windowed.map((b) => `"${b.name}";r=${b.remaining};t=${b.resetIn}`).join(", "),
  };
}

function blockedMessage(primary: BucketState): string {
  if (primary.name === "in_flight")
    return `too many requests at once: at most ${primary.limit} may run together; retry in ${primary.resetIn} s`;
  return `rate limit exceeded: ${primary.name} allows ${primary.limit} requests per ${primary.windowSeconds} s; retry in ${primary.resetIn} s`;
}

/**
 * HTTP 403 of a refused request (decisions.md): `errors` and `_rateLimit`; a development key's also
 * carries `data.error` with statusCode 429, so clients that read `data.error` first understand it too.
 */
export function blockedBody(tier: RateTier, decision: RateDecision, upgradeUrl: string): Record<string, unknown> {
  const primary = primaryBucket(decision);
  const message = blockedMessage(primary);
  const body: Record<string, unknown> = {
    errors: [{ message, code: "RATE_LIMITED" }],
    _rateLimit: rateLimitReport(tier, decision),
  };
  if (!tier.developmentError) return body;
  return {
    data: {
      error: {
        statusCode: 429,
        message,
        code: "RATE_LIMITED",
        reason: primary.name === "in_flight" ? "concurrent" : "rate",
        bucket: primary.name,
        retry_in: primary.resetIn,
        limits: Object.fromEntries(
          decision.buckets.map((b) => [
            b.name,
            { limit: b.limit, ...(b.windowSeconds !== undefined && { window_seconds: b.windowSeconds }) },
          ]),
        ),
        upgrade_url: upgradeUrl,
      },
    },
    ...body,
  };
}

/**
 * The default `upgrade_url` (`{api_origin}/upgrade`; GATEWAY_UPGRADE_URL points it at a partner console
 * instead): a plain page on what a refused partner can do, so the link in every development refusal
 * answers.
 */
const upgradePath = "/upgrade";

export const upgradePageRoute: RawRoute = {
  path: upgradePath,
  method: "GET",
  serve: () => ({
    status: 200,
    headers: {
      "content-type": "text/plain; charset=utf-8",
      "cache-control": "public, max-age=300",
      "x-content-type-options": "nosniff",
    },
    body: upgradePage,
  }),
};

const upgradePage = `Raising a key's rate limits

A request was refused because a bucket of its key's tier was full. The refusal says which:
data.error.bucket (or _rateLimit.primary.bucket), when it has room again (retry_in, primary.resetIn, in
seconds), and every bucket's limit (data.error.limits). A refused request ran nothing.

- Retry after retry_in seconds.
- Limits are raised per key, on request. The operator of this service runs
      npx svcctl key limits --key-id KEY_ID --bucket BUCKET --limit N
  (KEY_ID from "npx svcctl key list --org ORG"; --limit 0 returns the bucket to its default). Every
  gateway replica applies it from the next request on.
- Development keys (svc_dev_) are for testing; a production key (svc_production_) has its own tier.

The repository's README says the same under "Raising a key's rate limits".
`;
