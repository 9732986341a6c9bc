import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/** One exported span as the receiver read it from an OTLP/HTTP JSON export. */
export interface ReceivedSpan {
  service: string;
  traceId: string;
  spanId: string;
  /** Empty for a trace's root. */
  parentSpanId: string;
  name: string;
  /** OTLP's SpanKind: 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  kind: number;
  attributes: Record<string, string | number | boolean>;
  /** The spans this one links to (in other traces, or this one), as trace and span ids. */
  links: { traceId: string; spanId: string }[];
}

export const spanKind = { server: 2, client: 3, producer: 4, consumer: 5 } as const;

interface OtlpValue {
  stringValue?: string;
  intValue?: number | string;
  boolValue?: boolean;
  doubleValue?: number;
}
interface OtlpAttribute {
  key: string;
  value: OtlpValue;
}
interface OtlpExport {
  resourceSpans?: {
    resource?: { attributes?: OtlpAttribute[] };
    scopeSpans?: {
      spans?: {
        traceId: string;
        spanId: string;
        parentSpanId?: string;
        name: string;
        kind: number;
        attributes?: OtlpAttribute[];
        links?: { traceId: string; spanId: string }[];
      }[];
    }[];
  }[];
}

const attributeValue = (v: OtlpValue): string | number | boolean =>
  v.stringValue ?? (v.intValue === undefined ? undefined : Number(v.intValue)) ?? v.boolValue ?? v.doubleValue ?? "";

const attributesOf = (list: OtlpAttribute[] = []) =>
  Object.fromEntries(list.map((a) => [a.key, attributeValue(a.value)]));

/**
 * An OTLP/HTTP trace receiver in the test's process, on a port the kernel picks: the mesh's exporters send it
 * JSON (`@opentelemetry/exporter-trace-otlp-http`), and it keeps every span and every export's raw text.
 */
export async function startOtlpReceiver(): Promise<{
  url: string;
  spans: ReceivedSpan[];
  /** Every export body as it arrived, for searching what the spans carry. */
  bodies: string[];
  close(): Promise<void>;
}> {
  const spans: ReceivedSpan[] = [];
  const bodies: string[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const text = Buffer.concat(chunks).toString("utf8");
      if (req.url !== "/v1/traces" || !(req.headers["content-type"] ?? "").startsWith("application/json")) {
        res.writeHead(415).end();
        return;
      }
      bodies.push(text);
      for (const resourceSpans of (JSON.parse(text) as OtlpExport).resourceSpans ?? []) {
        const service = String(attributesOf(resourceSpans.resource?.attributes)["service.name"] ?? "");
        for (const scope of resourceSpans.scopeSpans ?? [])
          for (const span of scope.spans ?? [])
            spans.push({
              service,
              traceId: span.traceId,
              spanId: span.spanId,
              parentSpanId: span.parentSpanId ?? "",
              name: span.name,
              kind: span.kind,
              attributes: attributesOf(span.attributes),
              links: (span.links ?? []).map(({ traceId, spanId }) => ({ traceId, spanId })),
            });
      }
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    spans,
    bodies,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
