import {
  fromDataError,
  fromInputValidation,
  fromNoAnswer,
  fromRateLimited,
  fromUnexpected,
  type SvcError,
} from "./errors.ts";
import type { EnvelopeError, InputValidationAnswer, RateLimitedAnswer, RateLimitReport } from "./operations.ts";

/** What came with an answer besides its result; on every result as the non-enumerable `response`. */
export interface ResponseInfo {
  /** HTTP status of the final answer. */
  status: number;
  /** True when the gateway replayed the kept answer of an earlier request with the same `Idempotency-Key`. */
  idempotentReplayed: boolean;
  /** The `Idempotency-Key` the POST carried (the same on every retry of one call). */
  idempotencyKey: string | undefined;
  rateLimit: RateLimitReport | undefined;
  /** Requests sent for this call: 1 plus the retries. */
  attempts: number;
  headers: Headers;
}

export type WithResponse<T> = T & { readonly response: ResponseInfo };

export interface TransportOptions {
  credential: string;
  baseUrl: string;
  fetch: typeof fetch;
  timeoutMs: number;
  maxRetries: number;
  /** Milliseconds since the epoch; the retry schedule and the timeout read it. */
  now: () => number;
  /** A number in [0, 1) for the backoff's jitter. */
  random: () => number;
  sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
}

export interface CallOptions {
  /** Sent as `Idempotency-Key` on a POST instead of a new UUID, so a retry of the caller's own is a replay. */
  idempotencyKey?: string;
  /** Overrides the client's `timeoutMs` for this call (the whole call, retries included). */
  timeoutMs?: number;
  signal?: AbortSignal;
}

export interface Call {
  method: "GET" | "POST";
  path: string;
  input: Record<string, unknown>;
  /** `data` is the result itself (status, logout) instead of holding it under `data.data`. */
  flat: boolean;
  /** Another bearer than the client's key (a grant token), or null for an operation that takes none. */
  credential?: string | null;
  options: CallOptions | undefined;
}

const baseDelayMs = 500;
const maxDelayMs = 8_000;

/** Capped exponential backoff with full jitter: a random wait up to min(cap, base·2^retry). */
const backoffMs = (retry: number, random: () => number) =>
  Math.floor(random() * Math.min(maxDelayMs, baseDelayMs * 2 ** retry));

/** A failed attempt and whether another may follow it. */
type Attempt =
  | { kind: "answer"; value: unknown; info: ResponseInfo }
  | { kind: "retry"; error: SvcError; afterMs?: number }
  | { kind: "fail"; error: SvcError };

/**
 * One operation over HTTP: the credential, the envelope, the refusal shapes and the retry rule. It retries a
 * failed connection, HTTP 502 and 503, and a `data.error` with `retryable: true`; a development key's rate limit
 * only after its `retry_in`; never past the call's timeout. Every POST carries one `Idempotency-Key` for all its
 * attempts, so a retried create that had in fact run is answered with the kept answer, not run twice.
 */
export class Transport {
  private readonly options: TransportOptions;

  constructor(options: TransportOptions) {
    this.options = options;
  }

  async call<T>(call: Call): Promise<WithResponse<T>> {
    const { options } = this;
    const timeoutMs = call.options?.timeoutMs ?? options.timeoutMs;
    const deadline = options.now() + timeoutMs;
    const idempotencyKey = call.method === "POST" ? (call.options?.idempotencyKey ?? crypto.randomUUID()) : undefined;
    const requestId = typeof call.input.request_id === "string" ? call.input.request_id : undefined;
    for (let attempt = 1; ; attempt++) {
      const outcome = await this.attempt(call, { deadline, idempotencyKey, requestId, attempt });
      if (outcome.kind === "answer") return withResponse(outcome.value as T, outcome.info);
      if (outcome.kind === "fail" || attempt > options.maxRetries) throw outcome.error;
      const wait = outcome.afterMs ?? backoffMs(attempt - 1, options.random);
      if (options.now() + wait >= deadline) throw outcome.error;
      await options.sleep(wait, call.options?.signal);
    }
  }

  private async attempt(
    call: Call,
    context: { deadline: number; idempotencyKey: string | undefined; requestId: string | undefined; attempt: number },
  ): Promise<Attempt> {
    const { requestId } = context;
    // A string, not a URL object: fetch parses either again, and building the object first costs about 7% of a call.
    let url = `${this.options.baseUrl}${call.path}`;
    const headers: Record<string, string> = { accept: "application/json" };
    const credential = call.credential === undefined ? this.options.credential : call.credential;
    if (credential !== null) headers.authorization = `Bearer ${credential}`;
    let body: string | undefined;
    if (call.method === "GET") {
      const query = new URLSearchParams();
      for (const [name, value] of Object.entries(call.input)) if (value !== undefined) query.set(name, String(value));
      if (query.size > 0) url += `?${query}`;
    } else {
      headers["content-type"] = "application/json";
      headers["idempotency-key"] = context.idempotencyKey as string;
      body = JSON.stringify(call.input);
    }
    // A timer cleared once the answer is read, not AbortSignal.timeout: Node's fetch charged that about 5% of a
    // local call, this about 2% (sdk-call.bench.ts).
    const timeout = new AbortController();
    const timer = setTimeout(
      () => timeout.abort(new DOMException("The operation timed out.", "TimeoutError")),
      Math.max(1, context.deadline - this.options.now()),
    );
    const signal = call.options?.signal ? AbortSignal.any([call.options.signal, timeout.signal]) : timeout.signal;
    let response: Response;
    let text: string;
    try {
      response = await this.options.fetch(url, { method: call.method, headers, body, signal });
      text = await response.text();
    } catch (cause) {
      if (call.options?.signal?.aborted) throw call.options.signal.reason;
      if (timeout.signal.aborted) return { kind: "fail", error: fromNoAnswer("timeout", requestId, cause) };
      return { kind: "retry", error: fromNoAnswer("connection_failed", requestId, cause) };
    } finally {
      clearTimeout(timer);
    }
    const status = response.status;
    const answer = parsed(text);
    const rateLimit = (answer as { _rateLimit?: RateLimitReport } | undefined)?._rateLimit;
    if (status === 200) {
      const data = (answer as { data?: { error?: EnvelopeError; data?: unknown } } | undefined)?.data;
      if (data?.error !== undefined) {
        const error = fromDataError(data.error, { rateLimit, requestId, raw: answer });
        return error.retryable ? { kind: "retry", error } : { kind: "fail", error };
      }
      if (data === undefined || (!call.flat && data.data === undefined))
        return { kind: "fail", error: fromUnexpected(status, answer, requestId) };
      return {
        kind: "answer",
        value: call.flat ? data : data.data,
        info: {
          status,
          idempotentReplayed: response.headers.get("idempotent-replayed") === "true",
          idempotencyKey: context.idempotencyKey,
          rateLimit,
          attempts: context.attempt,
          headers: response.headers,
        },
      };
    }
    if (status === 400 && (answer as { code?: unknown } | undefined)?.code === "InputValidationError")
      return { kind: "fail", error: fromInputValidation(answer as InputValidationAnswer, requestId) };
    if (status === 403 && (answer as RateLimitedAnswer | undefined)?.errors?.[0]?.code === "RATE_LIMITED") {
      const error = fromRateLimited(answer as RateLimitedAnswer, requestId);
      return developmentRetryIn(answer as RateLimitedAnswer) === undefined
        ? { kind: "fail", error }
        : { kind: "retry", error, afterMs: (error.retryIn as number) * 1000 };
    }
    const error = fromUnexpected(status, answer, requestId);
    return status === 502 || status === 503 ? { kind: "retry", error } : { kind: "fail", error };
  }
}

/** The JSON of an answer; undefined for an empty or non-JSON body (a 500 may have either). */
function parsed(text: string): unknown {
  try {
    return text === "" ? undefined : JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** Only a development key's refusal says when to come back; a production limit is the caller's to pace. */
const developmentRetryIn = (answer: RateLimitedAnswer) => answer.data?.error?.retry_in;

function withResponse<T>(value: T, info: ResponseInfo): WithResponse<T> {
  const result = (typeof value === "object" && value !== null ? value : { value }) as T & object;
  Object.defineProperty(result, "response", { value: info, enumerable: false });
  return result as WithResponse<T>;
}

/** A wait that ends early, rejecting, when the signal aborts. */
export const abortableSleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
