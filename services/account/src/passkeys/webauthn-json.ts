import type { AuthenticationResponseJSON, RegistrationResponseJSON } from "@simplewebauthn/server";
import { parseJsonObject } from "../input.ts";
import { invalidArgument } from "../refusal.ts";

/**
 * The form of a WebAuthn response as JSON text, checked before a ceremony is used up: a caller that
 * sends something that is not a response at all gets InvalidArgument and keeps its ceremony. Whether
 * the response is genuine is the verifier's question (PermissionDenied).
 */
export function registrationResponse(text: string): RegistrationResponseJSON {
  const response = credentialForm(text);
  requireStrings(response.response as Record<string, unknown>, ["clientDataJSON", "attestationObject"]);
  return response as unknown as RegistrationResponseJSON;
}

export function authenticationResponse(text: string): AuthenticationResponseJSON {
  const response = credentialForm(text);
  requireStrings(response.response as Record<string, unknown>, ["clientDataJSON", "authenticatorData", "signature"]);
  return response as unknown as AuthenticationResponseJSON;
}

function credentialForm(text: string): Record<string, unknown> {
  if (text === "") throw invalidArgument("response_json is required");
  const response = parseJsonObject(text, "response_json");
  requireStrings(response, ["id", "rawId", "type"]);
  if (typeof response.response !== "object" || response.response === null || Array.isArray(response.response))
    throw invalidArgument("response_json.response must be an object");
  return response;
}

function requireStrings(object: Record<string, unknown>, keys: string[]): void {
  for (const key of keys) {
    if (typeof object[key] !== "string" || object[key] === "") throw invalidArgument(`response_json is missing ${key}`);
  }
}
