import { type Span, SpanKind } from "@opentelemetry/api";
import { inSpanUnder, type StoredTraceContext } from "./event-tracing.ts";
import { tracer, tracingOn } from "./telemetry.ts";

export type { Span };

/**
 * The span of one public operation, named by its route, never its URL (a query may carry a secret). It starts
 * a new trace: a `traceparent` from the internet is not trusted to join ours.
 */
export function inHttpServerSpan<T>(
  method: string,
  route: string,
  work: (span: Span | undefined) => Promise<T>,
): Promise<T> {
  if (!tracingOn()) return work(undefined);
  return tracer().startActiveSpan(
    `${method} ${route}`,
    { kind: SpanKind.SERVER, root: true, attributes: { "http.request.method": method, "http.route": route } },
    async (span) => {
      try {
        return await work(span);
      } finally {
        span.end();
      }
    },
  );
}

/**
 * The span of an outgoing HTTP call (a webhook delivery, a classifier call), under `parent` when the work was
 * caused elsewhere, else under the active span. Only the method and the answer's status are recorded: an
 * endpoint's URL is a partner's to keep.
 */
export function inHttpClientSpan<T>(
  name: string,
  parent: StoredTraceContext | "active",
  work: (span: Span | undefined) => Promise<T>,
): Promise<T> {
  const options = { kind: SpanKind.CLIENT, attributes: { "http.request.method": "POST" } };
  if (parent !== "active") return inSpanUnder(parent, name, options, work);
  if (!tracingOn()) return work(undefined);
  return tracer().startActiveSpan(name, options, async (span) => {
    try {
      return await work(span);
    } finally {
      span.end();
    }
  });
}
