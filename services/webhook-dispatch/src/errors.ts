/** What a console operation can refuse; routes.ts turns the kind into the Connect code. */
export type WebhookErrorKind = "invalid_argument" | "not_found" | "failed_precondition";

export class WebhookError extends Error {
  readonly kind: WebhookErrorKind;
  constructor(kind: WebhookErrorKind, message: string) {
    super(message);
    this.name = "WebhookError";
    this.kind = kind;
  }
}
