import { DomainRefusal } from "@svc/platform";

/** What a console operation can refuse; routes.ts turns the kind into the Connect code. */
export type WebhookErrorKind = "invalid_argument" | "not_found" | "failed_precondition";

export class WebhookError extends DomainRefusal<WebhookErrorKind> {}
