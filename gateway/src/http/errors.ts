import { type JsonObject, type JsonValue, toJson } from "@bufbuild/protobuf";
import { StructSchema } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import type { ValidationIssue } from "./schema.ts";

/**
 * The one place where failures become what a partner reads. Three kinds:
 * - an operation that ran and refused: `data.error` in an HTTP 200 (`OperationError`, or a `ConnectError`
 *   from a business service, mapped by its code);
 * - input that failed validation before the operation ran: HTTP 400 `InputValidationError`;
 * - anything else is unhandled: HTTP 500, logged, with a body that reveals nothing.
 */

/** The statuses a partner branches on in `data.error.statusCode` (spec "Errors"); 410 is the app's confirm. */
export type ErrorStatus = 400 | 401 | 403 | 404 | 409 | 410 | 422 | 429 | 500 | 502;

/** `data.error`: `statusCode` and `message` always, `code` when there is one, plus code-specific fields. */
export interface EnvelopeError {
  statusCode: ErrorStatus;
  message: string;
  code?: string;
  [field: string]: JsonValue | undefined;
}

/** Thrown (or returned through `fail`) by a stage or handler to refuse the request as `data.error`. */
export class OperationError extends Error {
  readonly statusCode: ErrorStatus;
  readonly code: string | undefined;
  /** Code-specific fields such as `min_ttl_seconds` or `violations`. */
  readonly extra: JsonObject;

  constructor(statusCode: ErrorStatus, message: string, extra: JsonObject & { code?: string } = {}) {
    super(message);
    this.name = "OperationError";
    this.statusCode = statusCode;
    const { code, ...rest } = extra;
    this.code = code;
    this.extra = rest;
  }

  toEnvelope(): EnvelopeError {
    return {
      ...this.extra,
      statusCode: this.statusCode,
      message: this.message,
      ...(this.code === undefined ? {} : { code: this.code }),
    };
  }
}

/** HTTP 400 body: the input as received and every problem found. */
export interface InputValidationBody {
  code: "InputValidationError";
  message: string;
  input: unknown;
  errors: ValidationIssue[];
}

export class InputValidationError extends Error {
  readonly input: unknown;
  readonly errors: ValidationIssue[];

  constructor(input: unknown, errors: ValidationIssue[]) {
    super(`Input validation failed: ${errors.map((e) => e.message).join("; ")}`);
    this.name = "InputValidationError";
    this.input = input;
    this.errors = errors;
  }

  /** The input and each `invalidValue` cut as the decision "Bounded echo of bad input" says (`boundedEcho`). */
  toBody(): InputValidationBody {
    const errors = this.errors.map((issue) => {
      const invalidValue = boundedEcho(issue.invalidValue);
      // Still too large (an object of many keys): emptied like the input.
      if (echoBytes(invalidValue) <= maxEchoBytes) return { ...issue, invalidValue };
      return { ...issue, invalidValue: Array.isArray(invalidValue) ? [] : {} };
    });
    const input = boundedEcho(this.input);
    const echoed = isPlainObject(input) && echoBytes(input) <= maxEchoBytes;
    return {
      code: "InputValidationError",
      message: echoed ? this.message : `${this.message} (the input was too large to echo)`,
      input: echoed ? input : {},
      errors,
    };
  }
}

/** What a 400 echoes at most (decision "Bounded echo of bad input"). */
const maxEchoBytes = 2048;
const maxEchoString = 256;
const maxEchoItems = 20;
const maxEchoDepth = 5;
const cut = "…";

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);
const echoBytes = (value: unknown) => Buffer.byteLength(JSON.stringify(value) ?? "");

/**
 * Received input, cut so that a hostile body is never sent back whole: strings over 256 characters end in
 * `…`, arrays keep 20 items, anything nested deeper than 5 levels becomes `"…"`. Cut by code points, so
 * no half of a surrogate pair is left behind.
 */
export function boundedEcho(value: unknown, depth = 0): unknown {
  if (typeof value === "string") {
    const points = [...value];
    return points.length > maxEchoString ? `${points.slice(0, maxEchoString).join("")}${cut}` : value;
  }
  if (typeof value !== "object" || value === null) return value;
  if (depth >= maxEchoDepth) return cut;
  if (Array.isArray(value)) return value.slice(0, maxEchoItems).map((item) => boundedEcho(item, depth + 1));
  return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, boundedEcho(item, depth + 1)]));
}

/**
 * Connect codes of a business service's refusal, as the status a partner reads. Unavailable and
 * DeadlineExceeded are 502 ("retry with backoff"): the gateway worked, a service behind it did not answer.
 * So is Aborted, which no service refuses with: Connect gives it to a call whose connection was reset,
 * as when the service died in the middle of it (a conflict code would tell the partner not to retry).
 */
const statusByConnectCode: Partial<Record<Code, ErrorStatus>> = {
  [Code.InvalidArgument]: 400,
  [Code.OutOfRange]: 400,
  [Code.Unauthenticated]: 401,
  [Code.PermissionDenied]: 403,
  [Code.NotFound]: 404,
  [Code.AlreadyExists]: 409,
  [Code.FailedPrecondition]: 409,
  [Code.ResourceExhausted]: 429,
  [Code.Aborted]: 502,
  [Code.Unavailable]: 502,
  [Code.DeadlineExceeded]: 502,
};

const isErrorStatus = (n: unknown): n is ErrorStatus =>
  typeof n === "number" && [400, 401, 403, 404, 409, 410, 422, 429, 500, 502].includes(n);

/**
 * A business service refines its refusal with a `google.protobuf.Struct` error detail:
 * `code` becomes `data.error.code`, `status_code` overrides the status mapped from the Connect code
 * (410, 422), and every other field is copied into `data.error` (`min_ttl_seconds`, `violations`, …).
 */
function envelopeErrorFromConnect(error: ConnectError): EnvelopeError {
  const detail: JsonObject = Object.assign(
    {},
    ...error.findDetails(StructSchema).map((struct) => toJson(StructSchema, struct)),
  );
  const { status_code: statusOverride, code, ...extra } = detail;
  const statusCode = isErrorStatus(statusOverride) ? statusOverride : (statusByConnectCode[error.code] ?? 500);
  const deliberate = statusByConnectCode[error.code] !== undefined || Object.keys(detail).length > 0;
  return {
    ...extra,
    statusCode,
    message: publicMessage(error, statusCode, deliberate),
    ...(typeof code === "string" ? { code } : {}),
  };
}

/**
 * A deliberate refusal's message is meant for the partner. Internal or Unknown without a detail is what
 * Connect makes of an exception a service did not handle, and Unavailable names internal addresses:
 * that text stays in the gateway's log.
 */
function publicMessage(error: ConnectError, statusCode: ErrorStatus, deliberate: boolean): string {
  if (statusCode === 502) return "a service behind the gateway did not answer; retry with backoff";
  if (!deliberate) return "the operation failed; retry with backoff";
  return error.rawMessage;
}

/** A handled failure as `data.error`, or undefined when the failure is unhandled (HTTP 500). */
export function envelopeErrorOf(error: unknown): EnvelopeError | undefined {
  if (error instanceof OperationError) return error.toEnvelope();
  if (error instanceof ConnectError) return envelopeErrorFromConnect(error);
  return undefined;
}

export const unhandledBody = { message: "internal error" } as const;
