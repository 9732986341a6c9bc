/** What the account service refuses, by kind; routes.ts turns the kind into the Connect code. */
export type AccountErrorKind = "invalid_argument" | "not_found" | "failed_precondition" | "permission_denied" | "already_exists";

export class AccountError extends Error {
  readonly kind: AccountErrorKind;
  constructor(kind: AccountErrorKind, message: string) {
    super(message);
    this.name = "AccountError";
    this.kind = kind;
  }
}

export const invalidArgument = (message: string) => new AccountError("invalid_argument", message);
