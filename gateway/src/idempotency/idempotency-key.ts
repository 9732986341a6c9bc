import { createHash, type KeyObject } from "node:crypto";
import type { IncomingHttpHeaders } from "node:http";
import { canonicalJson } from "@svc/contracts/canonical-json";
import { keyedHash } from "@svc/platform";
import type { AuthenticatedCredential } from "../http/credential.ts";
import type { ValidationIssue } from "../http/schema.ts";

/** The header, as Stripe spells it. */
export const idempotencyHeader = "Idempotency-Key";

/** 1–255 printable ASCII characters: room for a UUID, a ULID or a partner's own request id. */
const keyForm = /^[\x20-\x7e]{1,255}$/;

/** A key is kept this long after its first use; then the same key runs the operation anew. */
export const idempotencyKeyLifetimeMs = 24 * 60 * 60_000;

export type HeaderReading =
  | { kind: "absent" }
  | { kind: "key"; key: string }
  | { kind: "invalid"; issue: ValidationIssue };

/** The request's `Idempotency-Key`, checked against the key form (an InputValidationError issue when it fails). */
export function readIdempotencyKey(headers: IncomingHttpHeaders): HeaderReading {
  const value = headers["idempotency-key"];
  if (value === undefined) return { kind: "absent" };
  if (typeof value === "string" && keyForm.test(value)) return { kind: "key", key: value };
  return {
    kind: "invalid",
    issue: {
      propertyPath: idempotencyHeader,
      invalidValue: typeof value === "string" ? value.slice(0, 255) : value,
      message: `${idempotencyHeader} must be 1 to 255 printable ASCII characters`,
    },
  };
}

const digest = (value: string): string => createHash("sha256").update(value).digest("base64url");

/**
 * Whose key it is (decisions.md, "Idempotency-Key scope"): the credential that sent it. A grant token
 * is scoped to its own digest, since gate must find its key again once the token is consumed (gate
 * accepts a consumed token with its key, see grant-token.ts); an operation without a
 * credential to the digest of the secret its input carries (verify-token's token, the web flow's `t`).
 * Undefined when there is nothing to scope a key to.
 */
export function idempotencyScope(request: {
  credential: AuthenticatedCredential | undefined;
  /** A grant token as presented (its credential is known only once gate has authenticated it). */
  grantToken: string | undefined;
  input: Record<string, unknown>;
  scopeField: string | undefined;
}): string | undefined {
  const { credential } = request;
  if (request.grantToken !== undefined) return grantTokenScope(request.grantToken);
  if (credential) {
    const { organizationId, credentialId } = credential.caller;
    return `${credential.kind}:${organizationId}:${credentialId}`;
  }
  const secret = request.scopeField === undefined ? undefined : request.input[request.scopeField];
  return typeof secret === "string" ? `input:${request.scopeField}:${digest(secret)}` : undefined;
}

export const grantTokenScope = (token: string): string => `grant_token:${digest(token)}`;

/** The name a key is stored under: a keyed hash of scope and key, so a stored row names neither. */
export const scopedKeyHash = (pepper: KeyObject, scope: string, key: string): Buffer =>
  keyedHash(pepper, `idempotency\n${scope}\n${key}`);

/**
 * What "the same request" means for a key: method, path and the input as validated (declared fields, defaults
 * filled), in canonical JSON so that two spellings of one input digest alike. Validation has refused what
 * canonical JSON cannot write (unpaired surrogates; JSON has no non-finite numbers).
 */
export const requestDigest = (method: string, path: string, input: unknown): Buffer =>
  createHash("sha256")
    .update(`${method}\n${path}\n${canonicalJson(input)}`)
    .digest();
