/**
 * The operations a running gateway describes in its `GET /v1/openapi.json`: the fuzz suite reads them
 * from there, never from the gateway's route table, so an operation added to the document is fuzzed
 * without a change here.
 */

export type JsonSchema = {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean | JsonSchema;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  items?: JsonSchema;
  minItems?: number;
  maxItems?: number;
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  format?: string;
  enum?: unknown[];
  const?: unknown;
  minimum?: number;
  maximum?: number;
  $ref?: string;
};

export interface Parameter {
  name: string;
  in: "query" | "path";
  required: boolean;
  schema: JsonSchema;
}

interface DocumentedResponse {
  /** Media type → schema (`{}` where the document gives none). */
  content: Record<string, JsonSchema>;
}

export interface FuzzOperation {
  /** `METHOD path`, as the table prints it. */
  label: string;
  operationId: string;
  method: "GET" | "POST" | "DELETE" | "OPTIONS";
  /** The path template of the document (`/qr/{request_id}.svg`). */
  path: string;
  /** The path below the gateway's origin, before the template is filled (`/v1/qr/{request_id}.svg`). */
  fullPath: string;
  /** Security scheme names the operation accepts; empty when it takes no credential. */
  accepts: string[];
  body: JsonSchema | undefined;
  parameters: Parameter[];
  /** Documented status → response. */
  responses: Record<string, DocumentedResponse>;
  /**
   * How the route answers: the spec's envelope (`data`, 400 InputValidationError, 403 RATE_LIMITED); JSON-RPC 2.0
   * (the MCP server, whose 200 is a JSON-RPC response object); or raw (key set, QR code, widget, the document itself,
   * a CORS preflight), answering only what it documents.
   */
  answers: "envelope" | "json-rpc" | "raw";
}

export interface OpenApiDocument {
  servers: { url: string }[];
  paths: Record<string, Record<string, unknown>>;
  components: Record<string, Record<string, unknown>>;
}

const methods = ["get", "post", "delete", "options"] as const;

/** Resolves `#/components/…` references, as deep as they go. */
export function resolveRef<T>(document: OpenApiDocument, value: T): T {
  const ref = (value as { $ref?: unknown } | undefined)?.$ref;
  if (typeof ref !== "string") return value;
  const [, , kind, name] = ref.split("/");
  return resolveRef(document, document.components[kind ?? ""]?.[name ?? ""] as T);
}

export function operationsOf(document: OpenApiDocument): FuzzOperation[] {
  const base = new URL(document.servers[0]?.url ?? "/v1", "http://x").pathname.replace(/\/$/, "");
  const out: FuzzOperation[] = [];
  for (const [path, item] of Object.entries(document.paths)) {
    const servers = item.servers as { url: string }[] | undefined;
    // A path item with servers of its own (the key set) lives below that origin, not below `{base_url}`.
    const prefix = servers ? new URL(servers[0]?.url ?? "/", "http://x").pathname.replace(/\/$/, "") : base;
    for (const method of methods) {
      const operation = item[method] as Record<string, unknown> | undefined;
      if (!operation) continue;
      const responses: Record<string, DocumentedResponse> = {};
      for (const [status, raw] of Object.entries((operation.responses ?? {}) as Record<string, unknown>)) {
        const response = resolveRef(document, raw) as { content?: Record<string, { schema?: JsonSchema }> };
        responses[status] = {
          content: Object.fromEntries(
            Object.entries(response.content ?? {}).map(([type, media]) => [type, media.schema ?? {}]),
          ),
        };
      }
      const requestBody = operation.requestBody as { content?: Record<string, { schema?: JsonSchema }> } | undefined;
      const ok = responses["200"]?.content["application/json"];
      out.push({
        label: `${method.toUpperCase()} ${path}`,
        operationId: String(operation.operationId),
        method: method.toUpperCase() as FuzzOperation["method"],
        path,
        fullPath: `${prefix}${path}`,
        accepts: ((operation.security ?? []) as Record<string, unknown>[]).flatMap((entry) => Object.keys(entry)),
        body: requestBody?.content?.["application/json"]?.schema,
        parameters: ((operation.parameters ?? []) as Parameter[]).map((parameter) => resolveRef(document, parameter)),
        responses,
        answers:
          ok?.properties?.data !== undefined && responses["400"] !== undefined
            ? "envelope"
            : ok?.properties?.jsonrpc !== undefined
              ? "json-rpc"
              : "raw",
      });
    }
  }
  return out;
}
