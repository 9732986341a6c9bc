import type { Json, OpenApiPart } from "../http/openapi/part.ts";
import { ref } from "../http/openapi/part.ts";
import { developmentInFlight, tiers } from "./rate-tiers.ts";

/** The rate limits in the OpenAPI document: `_rateLimit` with the tier table, the RateLimit headers, the 403. */

const bucketReport: Json = {
  type: "object",
  required: ["limit", "remaining", "resetIn"],
  properties: {
    limit: { type: "integer" },
    remaining: { type: "integer" },
    resetIn: { type: "integer", description: "seconds until the window resets" },
  },
};

const tierRows = Object.values(tiers)
  .map(
    (tier) =>
      `\`${tier.scope}\`: ${tier.buckets.map((b) => `${b.name} ${b.limit}/${b.windowSeconds} s${b.perClientIp ? " per client IP" : ""}`).join(", ")}${tier.inFlight ? `, in_flight ${tier.inFlight}` : ""}`,
  )
  .join("; ");

const rateLimitHeaders = {
  "RateLimit-Policy": ref("headers", "RateLimitPolicy"),
  RateLimit: ref("headers", "RateLimit"),
};

export const rateLimitPart: OpenApiPart = {
  components: {
    schemas: {
      RateLimit: {
        type: "object",
        description: `Beside \`data\` (or \`errors\`): always for API keys and grant tokens, for live site keys only with \`x-svc-include-ratelimit: true\`, always on a block. Tiers: ${tierRows}. Windows are fixed and aligned to the clock (a minute resets on the minute, a day at 00:00 UTC). The development \`burst\` bucket is named per_minute (30 per 10 s).`,
        required: ["scope", "primary", "buckets"],
        properties: {
          scope: { type: "string", description: "bs_test, bs_prod, pk_test, pk_live, bss_test, bss_prod, app or ip" },
          primary: {
            ...bucketReport,
            required: ["bucket", "limit", "remaining", "resetIn"],
            properties: { bucket: { type: "string" }, ...(bucketReport.properties as Json) },
          },
          buckets: { type: "object", additionalProperties: bucketReport },
        },
      },
      RateLimited: {
        type: "object",
        description: `A request refused by a rate limit ran nothing. On a development API key \`data.error\` says the same with statusCode 429 (reason \`rate\` or \`concurrent\`, in_flight cap ${developmentInFlight}).`,
        required: ["errors", "_rateLimit"],
        properties: {
          errors: {
            type: "array",
            items: {
              type: "object",
              required: ["message", "code"],
              properties: { message: { type: "string" }, code: { const: "RATE_LIMITED" } },
            },
          },
          _rateLimit: ref("schemas", "RateLimit"),
          data: {
            type: "object",
            properties: {
              error: {
                type: "object",
                required: ["statusCode", "message", "code", "reason", "bucket", "retry_in", "limits", "upgrade_url"],
                properties: {
                  statusCode: { const: 429 },
                  message: { type: "string" },
                  code: { const: "RATE_LIMITED" },
                  reason: { enum: ["rate", "concurrent"] },
                  bucket: { enum: ["per_minute", "hourly", "daily", "in_flight"] },
                  retry_in: { type: "integer" },
                  limits: {
                    type: "object",
                    additionalProperties: {
                      type: "object",
                      properties: { limit: { type: "integer" }, window_seconds: { type: "integer" } },
                    },
                  },
                  upgrade_url: { type: "string", format: "uri" },
                },
              },
            },
          },
        },
      },
    },
    headers: {
      RateLimitPolicy: {
        description:
          'Quota policies of the credential\'s tier (draft-ietf-httpapi-ratelimit-headers), one per windowed bucket: `"per_minute";q=60;w=60, …`.',
        schema: { type: "string" },
      },
      RateLimit: {
        description: 'What is left of each policy: `"per_minute";r=59;t=42, …` (r remaining, t seconds to reset).',
        schema: { type: "string" },
      },
    },
    responses: {
      RateLimited: {
        description: "Rate limit exceeded. Retry after `_rateLimit.primary.resetIn` seconds.",
        headers: rateLimitHeaders,
        content: { "application/json": { schema: ref("schemas", "RateLimited") } },
      },
    },
  },
  extras: { _rateLimit: ref("schemas", "RateLimit") },
  operation: (route) => ({
    headers: rateLimitHeaders,
    extras: { _rateLimit: ref("schemas", "RateLimit") },
    ...(route.rateLimit !== "exempt" && { responses: { "403": ref("responses", "RateLimited") } }),
  }),
};
