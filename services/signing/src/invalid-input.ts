/** A request the domain refuses as given; the routes answer it with InvalidArgument. */
export class InvalidInputError extends Error {}

export function requireText(value: string, field: string): string {
  if (value.trim() === "") throw new InvalidInputError(`${field} is required`);
  return value;
}

export function requireInstant(value: Date | undefined, field: string): Date {
  if (value === undefined || Number.isNaN(value.getTime())) throw new InvalidInputError(`${field} is required`);
  return value;
}
