import type { DescMethod, DescService } from "@bufbuild/protobuf";
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import {
  context,
  propagation,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  type SpanOptions,
  SpanStatusCode,
  trace,
} from "@opentelemetry/api";
import { tracer, tracingOn } from "./telemetry.ts";

const headerGetter = {
  keys: (carrier: Headers) => {
    const keys: string[] = [];
    carrier.forEach((_, key) => {
      keys.push(key);
    });
    return keys;
  },
  get: (carrier: Headers, key: string) => carrier.get(key) ?? undefined,
};
const headerSetter = { set: (carrier: Headers, key: string, value: string) => carrier.set(key, value) };

/** A Connect code as the protocol writes it ("not_found"), which the RPC conventions record. */
export const connectCodeName = (code: Code): string =>
  Code[code].replace(/[A-Z]/g, (c, at: number) => (at > 0 ? "_" : "") + c.toLowerCase());

interface MethodSpans {
  name: string;
  client: SpanOptions;
  server: SpanOptions;
}
const methodSpans = new WeakMap<DescMethod, MethodSpans>();

/** A method's span name and options, made at its first call rather than at every call. */
function spansOf(req: { service: DescService; method: DescMethod }): MethodSpans {
  let spans = methodSpans.get(req.method);
  if (spans === undefined) {
    const attributes = {
      "rpc.system.name": "connectrpc",
      "rpc.service": req.service.typeName,
      "rpc.method": req.method.name,
    };
    spans = {
      name: `${req.service.typeName}/${req.method.name}`,
      client: { kind: SpanKind.CLIENT, attributes },
      server: { kind: SpanKind.SERVER, attributes },
    };
    methodSpans.set(req.method, spans);
  }
  return spans;
}

/** Ends `span` with the call's Connect status: "ok", or the code of the error it threw. */
async function traced<T>(span: Span, call: () => Promise<T>): Promise<T> {
  try {
    const result = await call();
    span.setAttribute("rpc.response.status_code", "ok");
    return result;
  } catch (error) {
    const code = connectCodeName(ConnectError.from(error).code);
    span.setAttribute("rpc.response.status_code", code);
    span.setStatus({ code: SpanStatusCode.ERROR, message: code });
    throw error;
  } finally {
    span.end();
  }
}

/** A client span per call; its context travels in the request's `traceparent` header to the server's span. */
const clientTracing: Interceptor = (next) => (req) => {
  const { name, client } = spansOf(req);
  const span = tracer().startSpan(name, client);
  const withSpan = trace.setSpan(context.active(), span);
  propagation.inject(withSpan, req.header, headerSetter);
  return traced(span, () => context.with(withSpan, () => next(req)));
};

/** A server span per call, the child of the caller's span when the request carries one. */
const serverTracing: Interceptor = (next) => (req) => {
  const parent = propagation.extract(ROOT_CONTEXT, req.header, headerGetter);
  const { name, server } = spansOf(req);
  const span = tracer().startSpan(name, server, parent);
  return traced(span, () => context.with(trace.setSpan(parent, span), () => next(req)));
};

/** No interceptor at all while tracing is off. */
export const rpcClientTracing = (): Interceptor[] => (tracingOn() ? [clientTracing] : []);
export const rpcServerTracing = (): Interceptor[] => (tracingOn() ? [serverTracing] : []);
