import type { JsonObject } from "@bufbuild/protobuf";
import { DomainRefusal } from "@svc/platform";

/** What agentlink refuses, by kind; routes.ts turns the kind into the Connect code. */
export type AgentlinkRefusalKind =
  | "invalid_argument"
  | "not_found"
  | "already_exists"
  | "failed_precondition"
  /** A link code past its lifetime (FailedPrecondition; the app's claim answers it as 410). */
  | "expired"
  | "permission_denied"
  /** A service agentlink asks did not answer (Unavailable; the gateway answers 502). */
  | "unavailable";

/**
 * A refusal with the spec's `data.error` fields beside the message (`code`, `status_code` when it is not
 * the kind's, `min_ttl_seconds`, `violations`, …), sent as a `google.protobuf.Struct` error detail.
 */
export class AgentlinkRefusal extends DomainRefusal<AgentlinkRefusalKind> {
  readonly detail: JsonObject | undefined;
  constructor(kind: AgentlinkRefusalKind, message: string, detail?: JsonObject) {
    super(kind, message);
    this.detail = detail;
  }
}

export const refuse = (kind: AgentlinkRefusalKind, message: string, detail?: JsonObject) =>
  new AgentlinkRefusal(kind, message, detail);
