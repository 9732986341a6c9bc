import { DomainRefusal } from "@svc/platform";

/** What a console operation can refuse; routes.ts turns the kind into the Connect code. */
export type WebhookRefusalKind = "invalid_argument" | "not_found" | "failed_precondition";

export const refuse = (kind: WebhookRefusalKind, message: string) => new DomainRefusal(kind, message);
