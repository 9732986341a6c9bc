import { counter, durationHistogram, gauge } from "@svc/platform";

/**
 * The gateway's own metrics beside the platform's (`/metrics` on the console port). Labels are an operation's
 * id, an HTTP status, a rate tier's scope, a bucket's name or a 401's cause: never a credential or a caller's value.
 */
export const operationRequests = counter(
  "gateway_requests_total",
  "Public operations answered, by operation and status (an error's statusCode, even inside an HTTP 200 envelope)",
  ["operation", "status"],
);
export const operationDurations = durationHistogram(
  "gateway_request_duration_seconds",
  "Time to answer a public operation, in seconds",
  ["operation"],
);
export const rateLimitRefusals = counter(
  "gateway_rate_limit_refusals_total",
  "Requests a rate limit refused, by tier (the _rateLimit scope) and the bucket that was full",
  ["tier", "bucket"],
);
export const unauthenticated = counter(
  "gateway_unauthenticated_total",
  "Requests answered 401, by cause (the causes the partner cannot tell apart)",
  ["cause"],
);
export const heldLongPolls = gauge("gateway_long_polls_held", "Long-polls held open now, waiting for a change", [
  "kind",
]);
export const eventStreams = gauge("gateway_event_streams_open", "Server-sent event streams open now");
