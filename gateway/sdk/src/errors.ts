import type { EnvelopeError, InputValidationAnswer, RateLimitedAnswer, RateLimitReport } from "./operations.ts";

/** One item of `violations` (a 422 `trust_layer_rejected`), or of a 400's `errors`, as the spec names them. */
export type Violation = {
  source?: string;
  type?: string;
  path?: string;
  severity?: string;
  value?: unknown;
  explanation?: string;
  fix?: string;
  propertyPath?: string;
  invalidValue?: unknown;
  message?: string;
};

export interface SvcErrorFields {
  /** The status the refusal stands for: `data.error.statusCode`, or the HTTP status of a 400, 403 or 500; 0 when no answer came. */
  statusCode: number;
  code?: string | undefined;
  message: string;
  violations?: Violation[] | undefined;
  retryable?: boolean | undefined;
  nextStep?: string | undefined;
  rateLimit?: RateLimitReport | undefined;
  /** The `request_id` the call named (a verification request or an agent's proposal), when it named one. */
  requestId?: string | undefined;
  /** The whole answer, for logs. */
  raw?: unknown;
}

/** Every refusal and failure the SDK reports; `instanceof` one of the subclasses to branch. */
export class SvcError extends Error {
  override name = "SvcError";
  readonly statusCode: number;
  readonly code: string | undefined;
  readonly violations: Violation[];
  readonly retryable: boolean;
  readonly nextStep: string | undefined;
  readonly rateLimit: RateLimitReport | undefined;
  readonly requestId: string | undefined;
  readonly raw: unknown;

  constructor(fields: SvcErrorFields, options?: { cause?: unknown }) {
    super(fields.message, options);
    this.statusCode = fields.statusCode;
    this.code = fields.code;
    this.violations = fields.violations ?? [];
    this.retryable = fields.retryable ?? false;
    this.nextStep = fields.nextStep;
    this.rateLimit = fields.rateLimit;
    this.requestId = fields.requestId;
    this.raw = fields.raw;
  }
}

/** 401: no credential, or one that is unknown, revoked, expired, of the wrong kind or the other environment. */
export class AuthenticationError extends SvcError {
  override name = "AuthenticationError";
}
/** 400 (input validation, or a business rule) and 422 other than the trust layer's. */
export class InvalidRequestError extends SvcError {
  override name = "InvalidRequestError";
}
/** 404: no such proposal, binding, code or person. */
export class NotFoundError extends SvcError {
  override name = "NotFoundError";
}
/** 409: a pending request blocks (clear it with revoke), or an `Idempotency-Key` reused for another body. */
export class ConflictError extends SvcError {
  override name = "ConflictError";
}
/** HTTP 403 `RATE_LIMITED`; `retryIn` (seconds) is the development answer's `retry_in`, else `_rateLimit.primary.resetIn`. */
export class RateLimitError extends SvcError {
  override name = "RateLimitError";
  readonly retryIn: number | undefined;
  constructor(fields: SvcErrorFields & { retryIn?: number | undefined }) {
    super(fields);
    this.retryIn = fields.retryIn;
  }
}
/** `trust_layer_rejected` (422, with `violations`) or `trust_layer_unavailable` (retryable, with `nextStep`). */
export class TrustLayerError extends SvcError {
  override name = "TrustLayerError";
}

/** The class a `data.error` (or the same fields from another shape) belongs to. */
function classOf(statusCode: number, code: string | undefined): typeof SvcError {
  if (code?.startsWith("trust_layer_")) return TrustLayerError;
  if (code === "RATE_LIMITED" || statusCode === 429) return RateLimitError;
  switch (statusCode) {
    case 400:
    case 422:
      return InvalidRequestError;
    case 401:
      return AuthenticationError;
    case 404:
      return NotFoundError;
    case 409:
      return ConflictError;
    default:
      return SvcError;
  }
}

const numberOr = (value: unknown) => (typeof value === "number" ? value : undefined);
const stringOr = (value: unknown) => (typeof value === "string" ? value : undefined);

/** The refusal of an HTTP 200 answer (`data.error`). */
export function fromDataError(
  error: EnvelopeError,
  context: { rateLimit?: RateLimitReport | undefined; requestId?: string | undefined; raw: unknown },
): SvcError {
  const fields: SvcErrorFields & { retryIn?: number | undefined } = {
    statusCode: error.statusCode,
    code: error.code,
    message: error.message,
    violations: Array.isArray(error.violations) ? (error.violations as Violation[]) : undefined,
    retryable: error.retryable === true,
    nextStep: stringOr(error.next_step),
    retryIn: numberOr(error.retry_in),
    ...context,
  };
  return new (classOf(fields.statusCode, fields.code))(fields);
}

/** HTTP 400: `InputValidationError`, its `errors` as violations. */
export const fromInputValidation = (answer: InputValidationAnswer, requestId: string | undefined) =>
  new InvalidRequestError({
    statusCode: 400,
    code: answer.code,
    message: answer.message,
    violations: answer.errors,
    rateLimit: answer._rateLimit,
    requestId,
    raw: answer,
  });

/** HTTP 403 `RATE_LIMITED`: how long to wait comes from the development `data.error` when present. */
export function fromRateLimited(answer: RateLimitedAnswer, requestId: string | undefined): RateLimitError {
  const development = answer.data?.error;
  return new RateLimitError({
    statusCode: 403,
    code: "RATE_LIMITED",
    message: development?.message ?? answer.errors[0]?.message ?? "rate limit exceeded",
    rateLimit: answer._rateLimit,
    retryIn: development?.retry_in ?? answer._rateLimit?.primary?.resetIn,
    requestId,
    raw: answer,
  });
}

/** Any other answer: a 500 (possibly with an empty body), or a status the spec does not use. */
export const fromUnexpected = (status: number, raw: unknown, requestId: string | undefined) =>
  new SvcError({
    statusCode: status,
    code: status >= 500 ? "server_error" : "unexpected_answer",
    message: stringOr((raw as { message?: unknown } | null)?.message) ?? `HTTP ${status}`,
    retryable: status >= 500,
    requestId,
    raw,
  });

/** No answer at all: the connection failed, or the caller's timeout passed. */
export const fromNoAnswer = (code: "connection_failed" | "timeout", requestId: string | undefined, cause: unknown) =>
  new SvcError(
    {
      statusCode: 0,
      code,
      message: code === "timeout" ? "no answer within the timeout" : "the connection failed",
      retryable: true,
      requestId,
    },
    { cause },
  );
