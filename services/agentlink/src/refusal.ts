import { DomainRefusal } from "@svc/platform";

/** What agentlink refuses, by kind; routes.ts turns the kind into the Connect code. */
export type AgentlinkRefusalKind =
  | "invalid_argument"
  | "not_found"
  | "already_exists"
  | "failed_precondition"
  /** A link code past its lifetime (FailedPrecondition; the app's claim answers it as 410). */
  | "expired"
  | "permission_denied";

export const refuse = (kind: AgentlinkRefusalKind, message: string) => new DomainRefusal(kind, message);
