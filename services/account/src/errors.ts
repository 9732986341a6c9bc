import { DomainRefusal } from "@svc/platform";

/** What the account service refuses, by kind; routes.ts turns the kind into the Connect code. */
export type AccountErrorKind =
  | "invalid_argument"
  | "not_found"
  | "failed_precondition"
  | "permission_denied"
  | "already_exists"
  | "unauthenticated";

export class AccountError extends DomainRefusal<AccountErrorKind> {}

export const invalidArgument = (message: string) => new AccountError("invalid_argument", message);
