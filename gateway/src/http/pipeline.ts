import type { IncomingHttpHeaders, IncomingMessage } from "node:http";
import type { Clock, Logger } from "@svc/platform";
import type { PresentedGrant } from "../credentials/resolver.ts";
import type { AuthenticatedCredential } from "./credential.ts";
import {
  type EnvelopeError,
  envelopeErrorOf,
  type InputValidationBody,
  InputValidationError,
  OperationError,
} from "./errors.ts";
import type { EventStream, RecordTokenCheck, Route } from "./route.ts";
import { validate } from "./schema.ts";

/**
 * A public request passes through named stages, each a middleware around the rest:
 *
 *   parse → authenticate → (rate limit) → (alias) → validate → handle, then `envelope` renders the outcome.
 *
 * A stage may act before calling `next()` (read input, refuse), after it (add `_rateLimit`, add the
 * old alias fields to a result), or both (release an in-flight slot). `next()` never throws: a failure
 * further in arrives as an outcome, so every stage sees every result.
 */
export interface Stage {
  name: string;
  run(ctx: RequestContext, next: () => Promise<Outcome>): Promise<Outcome>;
}

/** What a request came to, before `envelope` makes it an HTTP response. */
export type Outcome =
  /** The handler's result: `data.data` or flat `data`, by the route's envelope style. */
  | { kind: "ok"; data: unknown }
  /**
   * The operation refused: `data.error` in an HTTP 200. `cause` is the failure of a service behind the
   * gateway (a 5xx) that the partner reads only as "retry": it goes to the log, never to the response.
   */
  | { kind: "error"; error: EnvelopeError; cause?: unknown }
  /** Input failed validation before the operation ran: HTTP 400. */
  | { kind: "invalid"; body: InputValidationBody }
  /** A response outside the envelope, for example the rate limiter's HTTP 403. */
  | { kind: "http"; status: number; body: unknown }
  /** Nothing handled it: HTTP 500, logged. */
  | { kind: "unhandled"; error: unknown }
  /** Server-Sent Events, written by the server outside the envelope. */
  | { kind: "stream"; stream: EventStream };

export interface RequestContext {
  route: Route;
  request: IncomingMessage;
  url: URL;
  headers: IncomingHttpHeaders;
  remoteAddress: string | undefined;
  /** The input as received (body object or query parameters), set by `parse`; what a 400 echoes. */
  rawInput: Record<string, unknown>;
  /** The input after `validate`: declared fields only, defaults filled in. */
  input: unknown;
  /**
   * Set by `authenticate` on routes that accept a credential; for a grant token, once gate has said
   * whom it stands for (`grant`).
   */
  credential: AuthenticatedCredential | undefined;
  /** Set by `authenticate` for a grant token, which gate authenticates as the operation runs. */
  grant?: PresentedGrant;
  /** Top-level siblings of `data` (`_rateLimit`, `_deprecation`). */
  extras: Record<string, unknown>;
  responseHeaders: Record<string, string>;
  /** What the route's handler reaches; the stages pass it on untouched. */
  services: unknown;
  clock: Clock;
  logger: Logger;
  /** Aborts when the client goes away. */
  signal: AbortSignal;
  /**
   * Set by the idempotency stage when the request carries an `Idempotency-Key`: the scoped key's hash,
   * for an operation that passes it on so the service behind dedupes a retry itself (create-verification-link).
   */
  idempotencyToken?: string;
  /** Set by the rate-limit stage on a `records-token-checks` route: what the handler records its check with. */
  recordTokenCheck?: RecordTokenCheck;
}

/** Every outcome but a stream: what the envelope renders. */
export type EnvelopedOutcome = Exclude<Outcome, { kind: "stream" }>;

export function outcomeOf(error: unknown): EnvelopedOutcome {
  if (error instanceof InputValidationError) return { kind: "invalid", body: error.toBody() };
  const envelopeError = envelopeErrorOf(error);
  if (!envelopeError) return { kind: "unhandled", error };
  return envelopeError.statusCode >= 500
    ? { kind: "error", error: envelopeError, cause: error }
    : { kind: "error", error: envelopeError };
}

/** Runs `stages` in order; a stage's throw becomes the outcome its caller sees. */
export function runPipeline(stages: readonly Stage[], ctx: RequestContext): Promise<Outcome> {
  const dispatch = async (i: number): Promise<Outcome> => {
    const stage = stages[i];
    if (!stage) return { kind: "error", error: { statusCode: 500, message: "the request reached no handler" } };
    try {
      return await stage.run(ctx, () => dispatch(i + 1));
    } catch (error) {
      return outcomeOf(error);
    }
  };
  return dispatch(0);
}

/**
 * Checks the raw input against the route's schema: HTTP 400 `InputValidationError` with every problem;
 * first, a missing field the route refuses as `data.error` (`refuseMissing`).
 */
export const validateStage: Stage = {
  name: "validate",
  async run(ctx, next) {
    for (const [field, refusal] of Object.entries(ctx.route.refuseMissing ?? {}))
      if (ctx.rawInput[field] === undefined) throw new OperationError(400, refusal.message, { code: refusal.code });
    const result = validate(ctx.route.input, ctx.rawInput, { fromQuery: ctx.route.method !== "POST" });
    if (!result.ok) throw new InputValidationError(ctx.rawInput, result.errors);
    ctx.input = result.value;
    return next();
  },
};

/** Calls the operation: the innermost stage. */
export const handleStage: Stage = {
  name: "handle",
  async run(ctx) {
    return ctx.route.handle(ctx.input, {
      caller: ctx.credential?.caller,
      credential: ctx.credential,
      services: ctx.services,
      rawInput: ctx.rawInput,
      clock: ctx.clock,
      logger: ctx.logger,
      signal: ctx.signal,
      idempotencyToken: ctx.idempotencyToken,
      recordTokenCheck: ctx.recordTokenCheck,
      grant: ctx.grant,
    });
  },
};
