import type { Logger } from "@svc/platform";
import { clientAddress, rateLimitedAddress } from "../http/client-address.ts";
import { rateLimitRefusals } from "../http/edge-metrics.ts";
import type { Stage } from "../http/pipeline.ts";
import { blockedBody, primaryBucket, rateLimitHeaders, rateLimitReport } from "./rate-limit-report.ts";
import type { RateLimiter } from "./rate-limiter.ts";
import { anonymousTier, planFor, type RatePlan } from "./rate-tiers.ts";

export interface RateLimitOptions {
  limiter: Pick<RateLimiter, "take" | "release">;
  /** `data.error.upgrade_url` of a development key's block: where a partner moves to production. */
  upgradeUrl: string;
  /** Requests per minute and client IP of operations without a credential; 0 leaves them uncounted. */
  anonymousPerMinute: number;
  /** Reverse proxies in front of the gateway whose `X-Forwarded-For` entries are believed. */
  trustedProxyHops: number;
  logger: Logger;
}

/** The spec's opt-in for live site keys. */
const asksForReport = (value: string | string[] | undefined): boolean =>
  typeof value === "string" && value.trim().toLowerCase() === "true";

/**
 * After authenticate: counts the request against its credential in every bucket of its tier. A refused
 * request ends here with HTTP 403 and runs nothing; an allowed one gets the RateLimit header fields and,
 * by its tier's rule, `_rateLimit`. An in_flight slot is held until the rest of the pipeline has
 * finished, whatever its outcome (the client may have gone: the work still ran until then).
 */
export function rateLimitStage(options: RateLimitOptions): Stage {
  const anonymous = options.anonymousPerMinute > 0 ? anonymousTier(options.anonymousPerMinute) : undefined;
  return {
    name: "rate limit",
    async run(ctx, next) {
      if (ctx.route.rateLimit === "exempt") return next();
      const clientIp = rateLimitedAddress(
        clientAddress(ctx.remoteAddress, ctx.headers["x-forwarded-for"], options.trustedProxyHops),
      );
      const plan: RatePlan | undefined = ctx.credential
        ? planFor(ctx.credential, ctx.headers.authorization, clientIp)
        : anonymous && { tier: anonymous, subject: `ip:${clientIp}`, clientIp };
      if (!plan) return next();

      const decision = await options.limiter.take(plan, ctx.clock.now());
      Object.assign(ctx.responseHeaders, rateLimitHeaders(decision));
      if (!decision.allowed) {
        rateLimitRefusals.inc({ tier: plan.tier.scope, bucket: primaryBucket(decision).name });
        return { kind: "http", status: 403, body: blockedBody(plan.tier, decision, options.upgradeUrl) };
      }
      if (plan.tier.reportsByDefault || asksForReport(ctx.headers["x-svc-include-ratelimit"]))
        ctx.extras._rateLimit = rateLimitReport(plan.tier, decision);

      const leaseId = decision.leaseId;
      if (leaseId === undefined) return next();
      try {
        return await next();
      } finally {
        // A lease that cannot be ended now expires on its own: that must not turn the answer into a failure.
        await options.limiter
          .release(leaseId)
          .catch((error: unknown) => options.logger.warn("in_flight lease not released", { error, lease_id: leaseId }));
      }
    },
  };
}
