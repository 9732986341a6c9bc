import type { Caller } from "@svc/proto/common/v1/caller_pb.js";

/**
 * What the pipeline knows of a caller, the names a route's `auth` policy uses, and where the bearer
 * value stands in a request. Resolving that value is the business of `credentials/`.
 */

/** The public credential kinds (spec "Authentication"), as routes name them in `auth.accepts`. */
export type CredentialKindName = "secret_key" | "site_key" | "grant_token" | "agent_key" | "user_session";

/** Why a credential was refused; a route's `auth.statusFor` may turn a default 401 into 403. */
export type AuthFailure =
  | "missing_bearer"
  | "unrecognized_credential"
  | "credential_not_accepted"
  | "invalid_key"
  | "revoked_key"
  | "expired_key"
  | "invalid_site_key"
  | "revoked_site_key"
  | "expired_site_key"
  | "origin_required"
  | "origin_not_allowed"
  /** Agent keys (Authentication rule 4): the form is the gateway's, the other causes agentlink's. */
  | "wrong_key_form"
  | "unknown_agent_name"
  | "other_environment"
  | "revoked_agent"
  | "wrong_secret";

/** Who is calling, once authenticated. The secret itself never leaves the authenticate stage. */
export interface AuthenticatedCredential {
  kind: CredentialKindName;
  /** What every business-service call carries. */
  caller: Caller;
  /** Gate keys the credential may use; empty allows every gate. */
  allowedGates: readonly string[];
  /** The request's Origin when a site key authenticated (it is then an allowed one). */
  origin?: string;
}

/**
 * The credential of `Authorization: Bearer <credential>`; undefined when the header is absent, lacks
 * the `Bearer ` prefix or carries nothing after it (spec: a missing prefix is 401 everywhere).
 */
export function bearerCredential(header: string | undefined): string | undefined {
  const match = /^Bearer +(\S+) *$/i.exec(header ?? "");
  return match?.[1];
}
