import { environmentName, type Logger } from "@svc/platform";
import type { PresentedGrant } from "../credentials/resolver.ts";
import { clientAddress, rateLimitedAddress } from "../http/client-address.ts";
import { rateLimitRefusals, unauthenticated } from "../http/edge-metrics.ts";
import { OperationError } from "../http/errors.ts";
import type { Outcome, RequestContext, Stage } from "../http/pipeline.ts";
import { blockedBody, primaryBucket, rateLimitHeaders, rateLimitReport } from "./rate-limit-report.ts";
import type { JoinedDecision, RateDecision, RateLimiter } from "./rate-limiter.ts";
import { anonymousTier, grantPlan, planFor, type RatePlan } from "./rate-tiers.ts";

export interface RateLimitOptions {
  limiter: Pick<RateLimiter, "take" | "decide" | "release">;
  /** `data.error.upgrade_url` of a development key's block: where a partner moves to production. */
  upgradeUrl: string;
  /** Requests per minute and client IP of operations without a credential; 0 leaves them uncounted. */
  anonymousPerMinute: number;
  /** Reverse proxies in front of the gateway whose `X-Forwarded-For` entries are believed. */
  trustedProxyHops: number;
  logger: Logger;
}

/** How a handler's token check ends when its request was refused: the stage answers it. */
class RefusedBeforeRecording extends Error {}

/** The spec's opt-in for live site keys. */
const asksForReport = (value: string | string[] | undefined): boolean =>
  typeof value === "string" && value.trim().toLowerCase() === "true";

/**
 * After authenticate: counts the request against its credential in every bucket of its tier. A refused
 * request ends here with HTTP 403 and runs nothing; an allowed one gets the RateLimit header fields and,
 * by its tier's rule, `_rateLimit`. An in_flight slot is held until the rest of the pipeline has
 * finished, whatever its outcome (the client may have gone: the work still ran until then), and given back
 * as the answer leaves: the answer does not wait for the statement that records it (a long-poll's wake took
 * 2.5 times as long with it), so this replica's next request of the same subject waits for it instead, and
 * a client that has its answer finds its slot free here. Another replica may count it a round trip longer.
 */
export function rateLimitStage(options: RateLimitOptions): Stage {
  const anonymous = options.anonymousPerMinute > 0 ? anonymousTier(options.anonymousPerMinute) : undefined;
  /** Slots being given back, by subject: settled once every one of them is recorded. */
  const releasing = new Map<string, Promise<void>>();
  const giveBack = (subject: string, leaseId: string) => {
    const given: Promise<void> = Promise.all([releasing.get(subject), release(leaseId)]).then(() => {
      if (releasing.get(subject) === given) releasing.delete(subject);
    });
    releasing.set(subject, given);
  };
  return {
    name: "rate limit",
    async run(ctx, next) {
      if (ctx.grant) return decideGrant(ctx, ctx.grant, next);
      if (ctx.route.rateLimit === "exempt") return next();
      const clientIp = clientIpOf(ctx);
      const plan: RatePlan | undefined = ctx.credential
        ? planFor(ctx.credential, ctx.headers.authorization, clientIp)
        : anonymous && { tier: anonymous, subject: `ip:${clientIp}`, clientIp };
      if (ctx.route.rateLimit === "records-token-checks") return decideWithTokenCheck(ctx, plan, next);
      if (!plan) return next();

      const given = releasing.get(plan.subject);
      if (given) await given;
      const decision = await options.limiter.take(plan, ctx.clock.now());
      const refusal = answerDecision(ctx, plan, decision);
      if (refusal) return refusal;
      const leaseId = decision.leaseId;
      if (leaseId === undefined) return next();
      try {
        return await next();
      } finally {
        giveBack(plan.subject, leaseId);
      }
    },
  };

  function clientIpOf(ctx: RequestContext): string {
    return rateLimitedAddress(
      clientAddress(ctx.remoteAddress, ctx.headers["x-forwarded-for"], options.trustedProxyHops),
    );
  }

  /**
   * A grant token is counted before gate has authenticated it (gate does so in the operation's own
   * call, credentials/grant-token.ts) and reported once gate has named its environment. An ending that
   * did not name it (this stage's refusal, a 400, one of gate's refusals, a replayed answer) asks gate:
   * a token gate does not know is then the 401 it always was, whatever else the request met.
   */
  async function decideGrant(ctx: RequestContext, grant: PresentedGrant, next: () => Promise<Outcome>) {
    const clientIp = clientIpOf(ctx);
    const decision =
      ctx.route.rateLimit === "exempt"
        ? undefined
        : await options.limiter.take(grantPlan(grant.token, clientIp, undefined), ctx.clock.now());
    const outcome = decision?.allowed === false ? undefined : await next();
    if (outcome?.kind === "error" && outcome.error.statusCode === 401) {
      unauthenticated.inc({ cause: "invalid_key" });
      return outcome;
    }
    const confirmed = await grant.confirm();
    if (!confirmed.ok) {
      unauthenticated.inc({ cause: confirmed.failure });
      throw new OperationError(401, confirmed.message);
    }
    ctx.credential = confirmed.credential;
    if (decision) {
      const development = environmentName(confirmed.credential.caller.environment) === "development";
      const refusal = answerDecision(ctx, grantPlan(grant.token, clientIp, development), decision);
      if (refusal) return refusal;
    }
    if (!outcome) throw new Error("an allowed grant-token request has no outcome");
    return outcome;
  }

  /** The refusal of a refused request; on an allowed one, the header fields and `_rateLimit` its answer carries. */
  function answerDecision(ctx: RequestContext, plan: RatePlan, decision: RateDecision): Outcome | undefined {
    Object.assign(ctx.responseHeaders, rateLimitHeaders(decision));
    if (!decision.allowed) {
      rateLimitRefusals.inc({ tier: plan.tier.scope, bucket: primaryBucket(decision).name });
      return { kind: "http", status: 403, body: blockedBody(plan.tier, decision, options.upgradeUrl) };
    }
    if (plan.tier.reportsByDefault || asksForReport(ctx.headers["x-svc-include-ratelimit"]))
      ctx.extras._rateLimit = rateLimitReport(plan.tier, decision);
    return undefined;
  }

  // A lease that cannot be ended now expires on its own: that must not turn the answer into a failure.
  async function release(leaseId: string): Promise<void> {
    await options.limiter
      .release(leaseId)
      .catch((error: unknown) => options.logger.warn("in_flight lease not released", { error, lease_id: leaseId }));
  }

  /**
   * verify-token's order: the handler checks the token, then its check and the request's rate decision
   * go in one statement, which records the check only if the request is allowed. A request whose handler
   * records nothing (a token refused before the ledger, a 400) is decided once it ran; refused, its
   * answer is the 403 all the same, and nothing it did is kept.
   */
  async function decideWithTokenCheck(
    ctx: RequestContext,
    plan: RatePlan | undefined,
    next: () => Promise<Outcome>,
  ): Promise<Outcome> {
    const given = plan && releasing.get(plan.subject);
    if (given) await given;
    let joined: Promise<JoinedDecision> | undefined;
    ctx.recordTokenCheck = async (check) => {
      if (joined) throw new Error("a request records one token check");
      joined = options.limiter.decide(plan, ctx.clock.now(), check);
      const { first } = await joined;
      if (first === undefined) throw new RefusedBeforeRecording();
      return first;
    };
    const outcome = await next();
    if (!plan) return outcome;
    const { decision } = await (joined ?? options.limiter.decide(plan, ctx.clock.now(), undefined));
    if (!decision) throw new Error("a request with a plan was not decided");
    if (decision.leaseId !== undefined) giveBack(plan.subject, decision.leaseId);
    return answerDecision(ctx, plan, decision) ?? outcome;
  }
}
