import type { AttestationLedgerCheck } from "@svc/contracts/attestation";
import type { Clock, Logger } from "@svc/platform";
import type { Caller } from "@svc/proto/common/v1/caller_pb.js";
import type { PresentedGrant } from "../credentials/resolver.ts";
import type { AuthenticatedCredential, AuthFailure, CredentialKindName } from "./credential.ts";
import { type EnvelopeError, type ErrorStatus, OperationError } from "./errors.ts";
import type { Infer, ObjectSchema, Schema } from "./schema.ts";

/** `{base_url}` below the public origin: every route's path is below it. */
export const basePath = "/v1";

/** Which credentials an operation takes, and the status of each refusal where its error table differs. */
export interface AuthPolicy {
  /** Credential kinds accepted; empty means the operation takes none and ignores `Authorization`. */
  accepts: readonly CredentialKindName[];
  /** Default: 401 for every failure except a site key's missing or disallowed Origin (403). */
  statusFor?: Partial<Record<AuthFailure, 401 | 403>>;
  /**
   * `data.error.code` of a refusal, only where the operation's error table names one (the
   * secured-accounts list); elsewhere authentication refusals carry `statusCode` and `message` only.
   */
  codeFor?: Partial<Record<AuthFailure, string>>;
}

/** `nested`: the result is `data.data` (nearly every operation); `flat`: directly `data` (status, logout). */
export type EnvelopeStyle = "nested" | "flat";

/** Writes a Server-Sent Events response: named events with a JSON `data`, and comments (heartbeats). */
export interface EventSink {
  send(event: string, data: unknown): void;
  comment(text: string): void;
}

/**
 * The body of a `text/event-stream` response, run once the headers are sent; the response ends when it
 * returns. `signal` aborts when the client goes away.
 */
export type EventStream = (sink: EventSink, signal: AbortSignal) => Promise<void>;

export type HandlerResult =
  | { kind: "ok"; data: unknown }
  | { kind: "error"; error: EnvelopeError }
  /** Server-Sent Events instead of the envelope (routes with `produces: "text/event-stream"`). */
  | { kind: "stream"; stream: EventStream };

export const ok = (data: unknown): HandlerResult => ({ kind: "ok", data });

/** A refusal as `data.error`; `extra` carries `code` and code-specific fields. Throwing `OperationError` is the same. */
export const fail = (
  statusCode: ErrorStatus,
  message: string,
  extra: ConstructorParameters<typeof OperationError>[2] = {},
): HandlerResult => ({
  kind: "error",
  error: new OperationError(statusCode, message, extra).toEnvelope(),
});

interface HandlerContext<Services> {
  /** Set when the route accepts a credential: who is calling, ready to pass to a business service. */
  caller: Caller | undefined;
  credential: AuthenticatedCredential | undefined;
  /** What the server was started with for handlers to reach: the gateway's `GatewayServices`. */
  services: Services;
  /** The input as received: what a 400 `InputValidationError` echoes. */
  rawInput: Record<string, unknown>;
  clock: Clock;
  logger: Logger;
  /** Aborts when the client goes away before the answer is sent (a long-poll frees its wait then). */
  signal: AbortSignal;
  /** The request's scoped `Idempotency-Key` hash, when it has one (src/idempotency/idempotency-stage.ts). */
  idempotencyToken: string | undefined;
  /**
   * On a `records-token-checks` route: decides the request's rate limits and records the check in the
   * ledger of first checks, in one statement; answers whether it was the token's first check. A refused
   * request rejects, and the rate-limit stage answers it.
   */
  recordTokenCheck: RecordTokenCheck | undefined;
  /** A grant token as presented (credentials/grant-token.ts): the operation hands it to gate, which authenticates it. */
  grant: PresentedGrant | undefined;
}

export type RecordTokenCheck = (check: AttestationLedgerCheck) => Promise<boolean>;

/**
 * One public operation. The route table (`operations/index.ts`) lists them all; everything a reader
 * or the OpenAPI generator needs to know about an operation is here as data, except the handler.
 */
export interface RouteDefinition<S extends ObjectSchema, Services> {
  /** Stable name for logs and the OpenAPI document (`verifyToken`). */
  operationId: string;
  method: "GET" | "POST" | "DELETE";
  /**
   * Below `{base_url}` (`/v1`), for example `/sdk/verify-token`. A DELETE names what it removes in the
   * path, as `{name}` segments (`/app/push-subscriptions/{id}`): they are its input.
   */
  path: `/${string}`;
  summary: string;
  auth: AuthPolicy;
  /** The JSON body of a POST, the query parameters of a GET, the path parameters of a DELETE. */
  input: S;
  /**
   * Required fields whose absence the operation's error table answers as a refusal, `data.error`
   * `{statusCode: 400, code, message}`, instead of an `InputValidationError`. `validate` checks them
   * first, after the rename window has read old names as new ones (`gate_required`).
   */
  refuseMissing?: Readonly<Record<string, { code: string; message: string }>>;
  envelope: EnvelopeStyle;
  /** The result (`data.data`, or `data` when flat), for the OpenAPI document; undescribed when absent. */
  output?: Schema;
  /**
   * `text/event-stream`: a successful answer is a stream of Server-Sent Events (the handler returns
   * `kind: "stream"`), each event's data shaped as `output`; refusals still come in the envelope.
   */
  produces?: "text/event-stream";
  /**
   * `exempt`: not counted by the rate limiter (the default counts every request, before it runs).
   * `records-token-checks`: counted when the handler records its token check (`recordTokenCheck`), in the
   * same statement, so that the check is recorded only if the request is allowed; a request whose
   * handler records none is counted after it ran (verify-token).
   */
  rateLimit?: "exempt" | "records-token-checks";
  /**
   * A POST operation without a credential: the input field holding the secret its `Idempotency-Key` is
   * scoped to (verify-token's `token`, the web flow's `t`). Operations with a credential are scoped to it.
   */
  idempotencyScope?: string;
  handle(input: Infer<S>, ctx: HandlerContext<Services>): Promise<HandlerResult>;
}

/** A route as the server holds it, whatever its schema: the pipeline validates the input before `handle`. */
export type Route<Services = unknown> = RouteDefinition<ObjectSchema, Services> & {
  handle(input: unknown, ctx: HandlerContext<Services>): Promise<HandlerResult>;
};

/** The names of a path's `{name}` segments, in order. */
const pathParameterNames = (path: string): string[] =>
  [...path.matchAll(/\{([a-z_]+)\}/g)].map((match) => match[1] as string);

/** Matches a full request path (with `{base_url}`) against a route's path, each `{name}` one segment. */
export const pathPattern = (path: string): RegExp =>
  new RegExp(`^${basePath}${path.replace(/[.*+?^$()|[\]\\]/g, "\\$&").replace(/\{[a-z_]+\}/g, "([^/]+)")}$`);

/** The path parameters of `pathname` for a route's path, decoded; undefined when a segment does not decode. */
export function pathParameters(path: string, pathname: string): Record<string, string> | undefined {
  const values = pathPattern(path).exec(pathname)?.slice(1) ?? [];
  try {
    return Object.fromEntries(pathParameterNames(path).map((name, i) => [name, decodeURIComponent(values[i] ?? "")]));
  } catch {
    return undefined;
  }
}
