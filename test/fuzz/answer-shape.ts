import type { FuzzOperation, JsonSchema, OpenApiDocument } from "./openapi-operations.ts";
import { resolveRef } from "./openapi-operations.ts";

/**
 * Whether one answer has a shape the contract allows: the spec's four shapes ("Errors → Four shapes")
 * for enveloped operations, JSON-RPC 2.0's for the MCP server, and the documented responses of the raw routes
 * (key set, QR code, widget, the document itself, CORS preflights). A 500 is never allowed, though the spec lists it: under the
 * fuzz every service is up, so an unhandled failure is a defect; a 5xx is allowed only where the
 * document names that exact status (the key set's and the widget's 503).
 */

export interface Answer {
  status: number;
  contentType: string;
  /** The body as text; empty for a Server-Sent Events stream, which is not read to its end. */
  text: string;
}

/** How an answer is counted in the table. */
export type AnswerKind =
  | "result" // 200 with data (data.data or flat data)
  | "refused" // 200 with data.error (4xx)
  | "invalid" // 400 InputValidationError
  | "limited" // 403 RATE_LIMITED
  | "stream" // 200 text/event-stream
  | "rpc" // 200 with a JSON-RPC result that is not a refusal
  | "raw"; // a raw route's documented answer

class ShapeError extends Error {}

const fail = (message: string): never => {
  throw new ShapeError(message);
};

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

const preview = (answer: Answer) => `${answer.status} ${answer.contentType}: ${answer.text.slice(0, 300)}`;

function parseJson(answer: Answer): unknown {
  try {
    return JSON.parse(answer.text);
  } catch {
    return fail(`the body is not JSON (${preview(answer)})`);
  }
}

/** The small part of JSON Schema the document uses for raw answers: type, required, properties, const, enum, items, maxItems. */
function matches(document: OpenApiDocument, raw: JsonSchema, value: unknown, at = "body"): void {
  const schema = resolveRef(document, raw);
  const types = schema.type === undefined ? [] : Array.isArray(schema.type) ? schema.type : [schema.type];
  const typeOf = (v: unknown) =>
    v === null ? "null" : Array.isArray(v) ? "array" : Number.isInteger(v) ? "integer" : typeof v;
  if (types.length > 0 && !types.some((t) => t === typeOf(value) || (t === "number" && typeOf(value) === "integer")))
    fail(`${at} is ${typeOf(value)}, documented ${types.join(" or ")}`);
  if (schema.const !== undefined && value !== schema.const) fail(`${at} is not ${JSON.stringify(schema.const)}`);
  if (schema.enum && !schema.enum.includes(value)) fail(`${at} is not one of ${JSON.stringify(schema.enum)}`);
  if (isObject(value)) {
    for (const name of schema.required ?? []) if (!(name in value)) fail(`${at}.${name} is missing`);
    for (const [name, property] of Object.entries(schema.properties ?? {}))
      if (name in value) matches(document, property, value[name], `${at}.${name}`);
  }
  if (Array.isArray(value)) {
    if (schema.maxItems !== undefined && value.length > schema.maxItems) fail(`${at} has too many items`);
    for (const [i, item] of value.entries()) if (schema.items) matches(document, schema.items, item, `${at}[${i}]`);
  }
}

/** What the gateway answers for requests Node's HTTP parser refuses before any route runs (http-hardening). */
const parserRefusals = new Set([408, 417, 431]);

function checkEnveloped(document: OpenApiDocument, operation: FuzzOperation, answer: Answer): AnswerKind {
  if (answer.status === 200 && answer.contentType.startsWith("text/event-stream")) {
    if (!operation.responses["200"]?.content["text/event-stream"]) fail("an event stream the document does not name");
    return "stream";
  }
  if (!answer.contentType.startsWith("application/json")) fail(`not JSON: ${preview(answer)}`);
  const body = parseJson(answer);
  if (!isObject(body)) return fail(`the body is not a JSON object (${preview(answer)})`);
  if (answer.status === 200) {
    const extras = Object.keys(body).filter((key) => key !== "data" && !key.startsWith("_"));
    if (extras.length > 0) fail(`200 with ${extras.join(", ")} beside data`);
    if (!isObject(body.data)) return fail(`200 without a data object (${preview(answer)})`);
    if (body.data.error === undefined) return "result";
    const error = body.data.error;
    if (!isObject(error)) return fail("data.error is not an object");
    if (typeof error.message !== "string") fail("data.error.message is not a string");
    if (!Number.isInteger(error.statusCode)) fail("data.error.statusCode is not an integer");
    const envelopeError = resolveRef<JsonSchema>(document, { $ref: "#/components/schemas/EnvelopeError" });
    const documented = envelopeError.properties?.statusCode?.enum as number[] | undefined;
    if (documented && !documented.includes(error.statusCode as number))
      fail(`data.error.statusCode ${error.statusCode} is not one the document lists`);
    if ((error.statusCode as number) >= 500)
      fail(`data.error ${error.statusCode} "${error.message}": an operation failed with every service up`);
    return "refused";
  }
  // Node's own parser refusals (a request line or headers too large: 431) are answered in the 400 shape.
  if (answer.status === 400 || parserRefusals.has(answer.status)) {
    if (body.code !== "InputValidationError") fail(`400 without code InputValidationError (${preview(answer)})`);
    if (typeof body.message !== "string") fail("400 without a message");
    if (!isObject(body.input)) fail("400 whose input is not an object");
    if (!Array.isArray(body.errors) || body.errors.length === 0) return fail("400 without errors");
    for (const error of body.errors) {
      if (!isObject(error)) return fail("400 with an error that is not an object");
      if (typeof error.propertyPath !== "string" || typeof error.message !== "string" || !("invalidValue" in error))
        fail(`400 error without propertyPath, invalidValue and message: ${JSON.stringify(error).slice(0, 200)}`);
    }
    return "invalid";
  }
  if (answer.status === 403 && operation.responses["403"]) {
    const errors = body.errors;
    if (!Array.isArray(errors) || !isObject(errors[0]) || errors[0].code !== "RATE_LIMITED")
      fail(`403 without errors[0].code RATE_LIMITED (${preview(answer)})`);
    if (!isObject(body._rateLimit)) fail("403 RATE_LIMITED without _rateLimit");
    return "limited";
  }
  return fail(`HTTP ${answer.status} is none of the spec's shapes (${preview(answer)})`);
}

function checkRaw(document: OpenApiDocument, operation: FuzzOperation, answer: Answer): AnswerKind {
  const documented = operation.responses[String(answer.status)];
  if (!documented) return fail(`HTTP ${answer.status} is not documented for this route (${preview(answer)})`);
  const types = Object.keys(documented.content);
  if (types.length === 0) return "raw";
  const type = types.find((t) => answer.contentType.startsWith(t));
  if (!type) return fail(`${answer.contentType || "no Content-Type"}, documented ${types.join(" or ")}`);
  if (type === "application/json") matches(document, documented.content[type] ?? {}, parseJson(answer));
  return "raw";
}

/**
 * A JSON-RPC route's answer: a 200 is one JSON-RPC 2.0 response object, a result or an error but never both, or a
 * stream the document names; other statuses are what the route documents. A JSON-RPC error, and a tool result
 * with `isError: true` (MCP's refusal, whose structured content is the spec's `data.error`), are refusals.
 */
function checkJsonRpc(document: OpenApiDocument, operation: FuzzOperation, answer: Answer): AnswerKind {
  if (answer.status !== 200 || answer.contentType.startsWith("text/event-stream")) {
    const kind = checkRaw(document, operation, answer);
    return answer.status === 200 ? "stream" : kind;
  }
  if (!answer.contentType.startsWith("application/json")) fail(`not JSON: ${preview(answer)}`);
  const body = parseJson(answer);
  if (!isObject(body)) return fail(`the body is not one JSON-RPC response object (${preview(answer)})`);
  if (body.jsonrpc !== "2.0") fail(`jsonrpc is not "2.0" (${preview(answer)})`);
  if (!(typeof body.id === "string" || Number.isInteger(body.id) || body.id === null))
    fail(`the id is neither a string, an integer nor null (${preview(answer)})`);
  if ("result" in body === "error" in body) fail(`not exactly one of result and error (${preview(answer)})`);
  if ("error" in body) {
    const error = body.error;
    if (!isObject(error) || !Number.isInteger(error.code) || typeof error.message !== "string")
      fail(`a JSON-RPC error without an integer code and a message (${preview(answer)})`);
    return "refused";
  }
  if (!isObject(body.result)) return fail(`the result is not an object (${preview(answer)})`);
  if (body.id === null) fail("a result under a null id");
  if (body.result.isError !== true) return "rpc";
  const error = isObject(body.result.structuredContent) ? body.result.structuredContent.error : undefined;
  if (!isObject(error) || typeof error.message !== "string" || !Number.isInteger(error.statusCode))
    fail(`a tool refusal whose structuredContent.error is not the spec's data.error (${preview(answer)})`);
  if ((error as { statusCode: number }).statusCode >= 500)
    fail(
      `a tool refused with ${(error as { statusCode: number }).statusCode}: an operation failed with every service up`,
    );
  return "refused";
}

const checksByAnswers = { envelope: checkEnveloped, "json-rpc": checkJsonRpc, raw: checkRaw } as const;

/** The kind of a well-shaped answer; throws a `ShapeError` saying what is wrong otherwise. */
export function checkAnswer(document: OpenApiDocument, operation: FuzzOperation, answer: Answer): AnswerKind {
  if (answer.status >= 500 && !(operation.responses[String(answer.status)] && answer.status !== 500))
    fail(`HTTP ${answer.status} (${preview(answer)})`);
  return checksByAnswers[operation.answers](document, operation, answer);
}

/** Whether a well-shaped answer refused the request (nothing ran): a raw route's documented 4xx too (the MCP endpoint's 400 and 401). */
export const isRefusal = (kind: AnswerKind, answer: Answer): boolean =>
  kind === "refused" ||
  kind === "invalid" ||
  kind === "limited" ||
  (kind === "raw" && answer.status >= 400 && answer.status < 500);
