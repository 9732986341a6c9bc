import { Code } from "@connectrpc/connect";
import { DomainRefusal, refusalTranslator } from "@svc/platform";

/**
 * A request the gate service refuses on purpose. Domain code throws these (`refuse`); `refusalsAsConnectErrors` is
 * the one place that turns them into Connect codes, which the gateway renders as the spec's `data.error` statuses.
 */
export type GateRefusalKind =
  /** 401: the grant token is unknown, expired, used or revoked. */
  | "unauthenticated"
  /** 400: bad input, or no Active gate with this key in the caller's environment. */
  | "invalid"
  /** 403: the gate is not among the key's allowed gates; a grant token of another organization. */
  | "forbidden"
  /** 404: no such request (or not the caller's). */
  | "not_found"
  /** 409: a blocking pending request (the 409 rule); a request that is no longer pending. */
  | "conflict";

export const refuse = (kind: GateRefusalKind, message: string) => new DomainRefusal(kind, message);

export const refusalsAsConnectErrors = refusalTranslator<GateRefusalKind>({
  unauthenticated: Code.Unauthenticated,
  invalid: Code.InvalidArgument,
  forbidden: Code.PermissionDenied,
  not_found: Code.NotFound,
  conflict: Code.FailedPrecondition,
});
