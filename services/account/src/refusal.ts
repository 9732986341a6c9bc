import { DomainRefusal } from "@svc/platform";

/** What the account service refuses, by kind; routes.ts turns the kind into the Connect code. */
export type AccountRefusalKind =
  | "invalid_argument"
  | "not_found"
  | "failed_precondition"
  | "permission_denied"
  | "already_exists"
  | "unauthenticated";

export const refuse = (kind: AccountRefusalKind, message: string) => new DomainRefusal(kind, message);

export const invalidArgument = (message: string) => refuse("invalid_argument", message);
