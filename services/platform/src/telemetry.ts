import type { Tracer } from "@opentelemetry/api";

/**
 * Tracing is off unless OTEL_EXPORTER_OTLP_ENDPOINT is set. Off, the SDK is never even loaded (`telemetry-sdk.ts`
 * is imported only when on), the API stays a no-op and no span is asked for (`tracingOn()`), so the hot paths pay
 * nothing.
 */
let started: Tracer | undefined;
let loading: Promise<Telemetry> | undefined;

export const tracingOn = (): boolean => started !== undefined;

/** The mesh's one tracer, kept rather than looked up through the global provider at every span. */
export const tracer = (): Tracer => {
  if (started === undefined) throw new Error("tracer() asked for while tracing is off");
  return started;
};

/** What `startTelemetry` returns: flushes the spans still queued, then stops exporting. */
export interface Telemetry {
  stop(): Promise<void>;
}

/** Several services started in one process (tests) share the first one's SDK; only its `stop` flushes. */
export async function startTelemetry(serviceName: string, env: NodeJS.ProcessEnv = process.env): Promise<Telemetry> {
  const nothing = { stop: async () => {} };
  if (!env.OTEL_EXPORTER_OTLP_ENDPOINT) return nothing;
  if (loading) return loading.then(() => nothing);
  loading = import("./telemetry-sdk.ts").then(({ startSdk }) => {
    const sdk = startSdk(serviceName, env);
    started = sdk.tracer;
    return sdk;
  });
  return loading;
}
