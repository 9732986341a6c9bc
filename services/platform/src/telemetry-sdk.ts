import { createRequire } from "node:module";
import { context, propagation, type Span, type Tracer, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { PgInstrumentation } from "@opentelemetry/instrumentation-pg";
import { detectResources, envDetector, resourceFromAttributes } from "@opentelemetry/resources";
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  ParentBasedSampler,
  type Sampler,
  TraceIdRatioBasedSampler,
  TracerProvider,
} from "@opentelemetry/sdk-trace";

/**
 * The OpenTelemetry SDK, loaded by `startTelemetry` only once tracing is on: it exports over OTLP/HTTP (JSON)
 * and the standard OTEL_* variables choose the sampler and add resource attributes.
 */
export function startSdk(serviceName: string, env: NodeJS.ProcessEnv): { tracer: Tracer; stop(): Promise<void> } {
  const provider = new TracerProvider({
    sampler: samplerFromEnvironment(env),
    resource: resourceFromAttributes({ "service.name": serviceName }).merge(
      detectResources({ detectors: [envDetector] }),
    ),
    spanProcessors: [
      new BatchSpanProcessor({
        exporter: new OTLPTraceExporter(),
        scheduledDelayMillis: 500,
        // One export per schedule even at a few thousand spans a second (the default of 512 sends several),
        // and a queue that holds a burst rather than dropping its spans.
        maxExportBatchSize: 4096,
        maxQueueSize: 16_384,
      }),
    ],
  });
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);
  instrumentPostgres(provider);
  return { tracer: provider.getTracer("svc-mesh"), stop: () => provider.shutdown() };
}

/**
 * Query spans for `pg`, however it is loaded. The services import pg as ESM, which the instrumentation's
 * require hook never sees; requiring it here once goes through the hook and patches the prototypes that
 * the ESM imports share. The statement text is replaced by its first keyword and parameters are never
 * recorded: MikroORM may inline values, and a value may be a partner's reference or an e-mail address. The
 * instrumentation writes the stable conventions' names (`db.query.text`), so the old `db.statement` is not added.
 */
function instrumentPostgres(tracerProvider: TracerProvider): void {
  const instrumentation = new PgInstrumentation({
    enhancedDatabaseReporting: false,
    ignoreConnectSpans: true,
    requireParentSpan: true,
    requestHook: (span, { query }) => redactStatement(span, query.text),
  });
  instrumentation.setTracerProvider(tracerProvider);
  instrumentation.enable();
  createRequire(import.meta.url)("pg");
}

function redactStatement(span: Span, text: string): void {
  span.setAttribute("db.query.text", /^\s*(\w+)/.exec(text)?.[1]?.toLowerCase() ?? "");
}

/** OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG as the specification names them; parent-based always-on by default. */
function samplerFromEnvironment(env: NodeJS.ProcessEnv): Sampler {
  const ratio = Number(env.OTEL_TRACES_SAMPLER_ARG ?? "1");
  const fraction = Number.isFinite(ratio) && ratio >= 0 && ratio <= 1 ? ratio : 1;
  switch (env.OTEL_TRACES_SAMPLER) {
    case "always_on":
      return new AlwaysOnSampler();
    case "always_off":
      return new AlwaysOffSampler();
    case "traceidratio":
      return new TraceIdRatioBasedSampler(fraction);
    case "parentbased_always_off":
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case "parentbased_traceidratio":
      return new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(fraction) });
    default:
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
  }
}
