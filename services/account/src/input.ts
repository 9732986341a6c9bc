import { invalidArgument } from "./refusal.ts";

/** Checks on what callers send, shared by the feature modules: each failure names the field. */
const uuidForm = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function requireText(value: string, field: string, maxLength = 512): string {
  if (value.trim() === "") throw invalidArgument(`${field} is required`);
  if (value.length > maxLength) throw invalidArgument(`${field} is longer than ${maxLength} characters`);
  return value;
}

/** Lower-cased, so one id has one spelling in every table and answer. */
export function requireUuid(value: string, field: string): string {
  if (value === "") throw invalidArgument(`${field} is required`);
  if (!uuidForm.test(value)) throw invalidArgument(`${field} is not a uuid: ${JSON.stringify(value)}`);
  return value.toLowerCase();
}

export function optionalUuid(value: string, field: string): string | null {
  return value === "" ? null : requireUuid(value, field);
}

export function requireInstant(value: Date | undefined, field: string): Date {
  if (value === undefined || Number.isNaN(value.getTime())) throw invalidArgument(`${field} is required`);
  return value;
}

/** JSON text from the caller (WebAuthn options and responses) as an object. */
export function parseJsonObject(text: string, field: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw invalidArgument(`${field} is not JSON`);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value))
    throw invalidArgument(`${field} is not a JSON object`);
  return value as Record<string, unknown>;
}
