import { createHash } from "node:crypto";
import { environmentName } from "@svc/platform";
import { type AuthenticatedCredential, bearerCredential } from "../http/credential.ts";

/**
 * The spec's tier table ("Limits"), as data: which buckets count a request, how many requests each
 * allows per window, and how a tier reports itself. Every window is fixed and aligned to the epoch of
 * the injected clock (a minute bucket resets on the minute, a daily one at 00:00 UTC).
 */

/** Bucket names as partners read them in `_rateLimit`, `data.error.bucket` and the RateLimit headers. */
export type BucketName = "per_minute" | "hourly" | "daily" | "per_ip" | "in_flight";

interface WindowBucket {
  name: Exclude<BucketName, "in_flight">;
  limit: number;
  windowSeconds: number;
  /** Counted per credential and client IP rather than per credential. */
  perClientIp?: boolean;
}

export interface RateTier {
  /** `_rateLimit.scope`. */
  scope: string;
  buckets: readonly WindowBucket[];
  /** Cap of the `in_flight` bucket (requests of one credential running at once), where the tier has one. */
  inFlight?: number;
  /** A blocked response also carries `data.error` (statusCode 429, reason, retry_in, limits, upgrade_url). */
  developmentError: boolean;
  /** `_rateLimit` on every counted response; otherwise only with `x-svc-include-ratelimit: true` (and on a block). */
  reportsByDefault: boolean;
}

/**
 * The cap of a development key's `in_flight` bucket, which the spec leaves open: ten requests at once
 * is far more than an integration under development needs and still stops a runaway loop.
 */
export const developmentInFlight = 10;

const minute = 60;
const hour = 3600;
const day = 86_400;

const productionBuckets: readonly WindowBucket[] = [
  { name: "per_minute", limit: 60, windowSeconds: minute },
  { name: "hourly", limit: 2000, windowSeconds: hour },
  { name: "daily", limit: 25_000, windowSeconds: day },
];

/**
 * The development tier's `burst` bucket (30 per 10 s) is reported as `per_minute` with its real limit
 * and window (decisions.md: "both spellings appear").
 */
const developmentBuckets: readonly WindowBucket[] = [
  { name: "per_minute", limit: 30, windowSeconds: 10 },
  { name: "hourly", limit: 300, windowSeconds: hour },
  { name: "daily", limit: 2000, windowSeconds: day },
];

const siteBuckets: readonly WindowBucket[] = [
  { name: "per_minute", limit: 120, windowSeconds: minute },
  { name: "daily", limit: 25_000, windowSeconds: day },
  { name: "per_ip", limit: 20, windowSeconds: minute, perClientIp: true },
];

/** Agent keys (decisions.md "Agent keys"): in_flight 200, a held long-poll counting as one. */
const agentBuckets: readonly WindowBucket[] = [
  { name: "per_minute", limit: 120, windowSeconds: minute },
  { name: "hourly", limit: 3000, windowSeconds: hour },
  { name: "daily", limit: 50_000, windowSeconds: day },
];
const agentInFlight = 200;

type TierName =
  | "secretDevelopment"
  | "secretProduction"
  | "siteTest"
  | "siteLive"
  | "grantTest"
  | "grantProduction"
  | "agentTest"
  | "agentProduction"
  | "userSession";

export const tiers: Readonly<Record<TierName, RateTier>> = {
  secretDevelopment: {
    scope: "bs_test",
    buckets: developmentBuckets,
    inFlight: developmentInFlight,
    developmentError: true,
    reportsByDefault: true,
  },
  secretProduction: { scope: "bs_prod", buckets: productionBuckets, developmentError: false, reportsByDefault: true },
  /** Test site keys report without being asked: the spec's opt-in header is for live keys only. */
  siteTest: { scope: "pk_test", buckets: siteBuckets, developmentError: false, reportsByDefault: true },
  siteLive: { scope: "pk_live", buckets: siteBuckets, developmentError: false, reportsByDefault: false },
  /** Grant tokens: the production defaults in both environments, counted per token. */
  grantTest: { scope: "bss_test", buckets: productionBuckets, developmentError: false, reportsByDefault: true },
  grantProduction: { scope: "bss_prod", buckets: productionBuckets, developmentError: false, reportsByDefault: true },
  /** Agent keys, counted per agent; a development agent's refusal carries `data.error` like a development key's. */
  agentTest: {
    scope: "agent_test",
    buckets: agentBuckets,
    inFlight: agentInFlight,
    developmentError: true,
    reportsByDefault: true,
  },
  agentProduction: {
    scope: "agent_prod",
    buckets: agentBuckets,
    inFlight: agentInFlight,
    developmentError: false,
    reportsByDefault: true,
  },
  /** The signed-in person's app session: the production defaults. */
  userSession: { scope: "app", buckets: productionBuckets, developmentError: false, reportsByDefault: true },
};

/** Operations without a credential (verify-token) are counted per client IP, when enabled. */
export function anonymousTier(perMinute: number): RateTier {
  return {
    scope: "ip",
    buckets: [{ name: "per_minute", limit: perMinute, windowSeconds: minute, perClientIp: true }],
    developmentError: false,
    reportsByDefault: false,
  };
}

/** The buckets whose limit an operator may raise for one key (`svcctl key limits`), by key type and environment. */
export function tierOfKey(type: "secret" | "site", environment: "development" | "production"): RateTier {
  if (type === "site") return environment === "development" ? tiers.siteTest : tiers.siteLive;
  return environment === "development" ? tiers.secretDevelopment : tiers.secretProduction;
}

/** What one request is counted against. */
export interface RatePlan {
  tier: RateTier;
  /** The counted party: `secret_key:<key id>`, `grant_token:<sha-256 of the token>`, `ip:<address>`, … */
  subject: string;
  clientIp: string;
  /** An API key's id: its raised limits replace the tier's. */
  keyId?: string;
}

/**
 * The tier and subject of an authenticated request. An agent key is counted per agent (all its keys
 * together, so a rotation does not double its allowance). A grant token is counted by a hash of the token itself:
 * it is the credential, and the gateway never learns more of it than its form.
 */
export function planFor(
  credential: AuthenticatedCredential,
  authorization: string | undefined,
  clientIp: string,
): RatePlan {
  const development = environmentName(credential.caller.environment) === "development";
  const id = credential.caller.credentialId;
  switch (credential.kind) {
    case "secret_key":
      return {
        tier: development ? tiers.secretDevelopment : tiers.secretProduction,
        subject: `secret_key:${id}`,
        clientIp,
        keyId: id,
      };
    case "site_key":
      return { tier: development ? tiers.siteTest : tiers.siteLive, subject: `site_key:${id}`, clientIp, keyId: id };
    case "grant_token":
      return grantPlan(bearerCredential(authorization) ?? "", clientIp, development);
    case "agent_key":
      return {
        tier: development ? tiers.agentTest : tiers.agentProduction,
        subject: `agent_key:${id}`,
        clientIp,
      };
    case "user_session":
      return { tier: tiers.userSession, subject: `user_session:${id}`, clientIp };
  }
}

/**
 * A grant token's plan, counted by a hash of the token itself. Its tier's name follows the token's
 * environment, which gate tells only once it has authenticated the token: both tiers count the same
 * buckets, so a request is counted before that (`development` unknown) and reported after.
 */
export function grantPlan(token: string, clientIp: string, development: boolean | undefined): RatePlan {
  return {
    tier: development ? tiers.grantTest : tiers.grantProduction,
    subject: `grant_token:${createHash("sha256").update(token).digest("base64url")}`,
    clientIp,
  };
}
