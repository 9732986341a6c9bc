import { unhandledBody } from "./errors.ts";
import type { EnvelopedOutcome } from "./pipeline.ts";
import type { EnvelopeStyle } from "./route.ts";

export interface HttpReply {
  status: number;
  body: unknown;
}

/**
 * The spec's envelope: HTTP 200 with `data` for everything an operation answered, its result nested
 * once more (`data.data`) unless the route is flat, its refusal in `data.error`. Only validation (400),
 * the rate limiter's own response and the unhandled (500) leave the envelope. `extras` (`_rateLimit`,
 * `_deprecation`) sit beside `data` or the 400 body; a 500 says nothing.
 */
export function envelope(
  outcome: EnvelopedOutcome,
  style: EnvelopeStyle,
  extras: Record<string, unknown> = {},
): HttpReply {
  switch (outcome.kind) {
    case "ok":
      return { status: 200, body: { data: style === "nested" ? { data: outcome.data } : outcome.data, ...extras } };
    case "error":
      return { status: 200, body: { data: { error: outcome.error }, ...extras } };
    case "invalid":
      return { status: 400, body: { ...outcome.body, ...extras } };
    case "http":
      return { status: outcome.status, body: outcome.body };
    case "unhandled":
      return { status: 500, body: unhandledBody };
  }
}
