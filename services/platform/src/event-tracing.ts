import { type MsgHdrs, headers as natsHeaders } from "@nats-io/transport-node";
import {
  type Attributes,
  context,
  isSpanContextValid,
  type Link,
  propagation,
  ROOT_CONTEXT,
  type Span,
  type SpanContext,
  SpanKind,
  SpanStatusCode,
  TraceFlags,
  trace,
} from "@opentelemetry/api";
import { tracer, tracingOn } from "./telemetry.ts";

/**
 * Trace context that outlives a call: stored with an outbox row, carried in a NATS message's headers, kept
 * with a webhook message until its delivery, so the work that follows continues the trace that caused it.
 * Stored as the W3C `traceparent` text; null while tracing is off or no span is active.
 */
export type StoredTraceContext = string | null;

/** The W3C `traceparent` of a span, written directly: the propagator's carrier object is not needed to store it. */
const traceparentOf = (span: SpanContext | undefined): StoredTraceContext =>
  span !== undefined && isSpanContextValid(span)
    ? `00-${span.traceId}-${span.spanId}-0${(span.traceFlags & TraceFlags.SAMPLED).toString(16)}`
    : null;

export const currentTraceContext = (): StoredTraceContext =>
  tracingOn() ? traceparentOf(trace.getActiveSpan()?.spanContext()) : null;

const storedParent = (stored: StoredTraceContext) =>
  propagation.extract(ROOT_CONTEXT, stored === null ? {} : { traceparent: stored });

/**
 * Runs `work` in a new span, child of `parent` (the stored context of the work that caused it), and ends the
 * span with the outcome. Without tracing, or without a stored parent, it only runs `work`.
 */
export async function inSpanUnder<T>(
  parent: StoredTraceContext,
  name: string,
  options: { kind: SpanKind; attributes?: Attributes; links?: Link[] },
  work: (span: Span | undefined) => Promise<T>,
): Promise<T> {
  if (!tracingOn() || parent === null) return work(undefined);
  const parentContext = storedParent(parent);
  const span = tracer().startSpan(name, options, parentContext);
  try {
    return await context.with(trace.setSpan(parentContext, span), () => work(span));
  } catch (error) {
    span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.name : "error" });
    throw error;
  } finally {
    span.end();
  }
}

/**
 * Work a later call does for an item that an earlier call created (a person's confirm of a card, hours after the
 * agent's inquire): run in a span under the item's stored context, so the signing and the outbox event that
 * follow continue the item's trace, with a link to the later call's own span, which stays in its own trace.
 */
export function underItemTrace<T>(stored: StoredTraceContext, name: string, work: () => Promise<T>): Promise<T> {
  const caller = trace.getActiveSpan()?.spanContext();
  return inSpanUnder(stored, name, { kind: SpanKind.INTERNAL, ...(caller && { links: [{ context: caller }] }) }, () =>
    work(),
  );
}

const messagingAttributes = (subject: string, operation: "send" | "process") => ({
  "messaging.system": "nats",
  "messaging.operation.type": operation,
  "messaging.destination.name": subject,
});

/** Publishes in a producer span under the event's stored context; the message's headers carry it on. */
export const publishTraced = <T>(
  subject: string,
  stored: StoredTraceContext,
  publish: (headers: MsgHdrs | undefined) => Promise<T>,
): Promise<T> =>
  inSpanUnder(
    stored,
    `send ${subject}`,
    { kind: SpanKind.PRODUCER, attributes: messagingAttributes(subject, "send") },
    (span) => {
      if (span === undefined) return publish(undefined);
      const headers = natsHeaders();
      propagation.inject(context.active(), headers, { set: (carrier, key, value) => carrier.set(key, value) });
      return publish(headers);
    },
  );

/**
 * A consumer span for a received message, child of its producer span, with the context to store for the
 * work it leads to. The caller ends the span once the message is handled.
 */
export function startConsumerSpan(
  subject: string,
  headers: MsgHdrs | undefined,
): { span: Span; traceContext: StoredTraceContext } | undefined {
  const traceparent = headers?.get("traceparent");
  if (!tracingOn() || !traceparent) return undefined;
  const parent = storedParent(traceparent);
  const span = tracer().startSpan(
    `process ${subject}`,
    { kind: SpanKind.CONSUMER, attributes: messagingAttributes(subject, "process") },
    parent,
  );
  return { span, traceContext: traceparentOf(span.spanContext()) };
}
