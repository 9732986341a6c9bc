import { Code, ConnectError } from "@connectrpc/connect";
import { type AgentlinkRefusalKind, refuse } from "../refusal.ts";

/** What the account service's refusals mean to the person's confirm; anything else is its unavailability (502). */
const kinds: Partial<Record<Code, AgentlinkRefusalKind>> = {
  [Code.InvalidArgument]: "invalid_argument",
  [Code.NotFound]: "not_found",
  [Code.FailedPrecondition]: "failed_precondition",
  [Code.PermissionDenied]: "permission_denied",
};

/** Rethrows an account call's failure as agentlink's own refusal, with the account's reason. */
export function accountRefusal(error: unknown): never {
  const connect = ConnectError.from(error);
  const kind = kinds[connect.code];
  if (kind === undefined) throw refuse("unavailable", "the account service did not answer; retry");
  throw refuse(kind, connect.rawMessage);
}

/** A passkey assertion the account service refused, for whatever reason it gives, is a refused confirmation (403). */
export function assertionRefusal(error: unknown): never {
  const connect = ConnectError.from(error);
  if (kinds[connect.code] === undefined) throw refuse("unavailable", "the account service did not answer; retry");
  throw refuse("permission_denied", `the passkey assertion does not confirm these decisions: ${connect.rawMessage}`);
}
