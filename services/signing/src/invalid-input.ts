import { DomainRefusal } from "@svc/platform";

/** What signing refuses: only input it cannot sign or check as given; routes.ts turns it into InvalidArgument. */
export type SigningRefusalKind = "invalid_argument";

export const invalidInput = (message: string) => new DomainRefusal<SigningRefusalKind>("invalid_argument", message);

export function requireText(value: string, field: string): string {
  if (value.trim() === "") throw invalidInput(`${field} is required`);
  return value;
}

export function requireInstant(value: Date | undefined, field: string): Date {
  if (value === undefined || Number.isNaN(value.getTime())) throw invalidInput(`${field} is required`);
  return value;
}
