import type { AuthenticatedCredential, AuthFailure, CredentialKindName } from "../http/credential.ts";
import type { PresentedGrant } from "./grant-token.ts";

/** A bearer value resolved: who is calling, or why the credential is refused. */
export type Resolution =
  | { ok: true; credential: AuthenticatedCredential }
  | { ok: false; failure: AuthFailure; message: string };

/** What a resolver answers: a resolution, or a grant token that gate authenticates as the operation runs. */
export type Presented = Resolution | { ok: true; presented: PresentedGrant };

/** What a resolver may read of the request besides the credential. */
export interface CredentialRequest {
  origin: string | undefined;
  /** A valid `Idempotency-Key` of a POST: a consumed grant token is accepted again with the key that consumed it. */
  idempotencyKey?: string;
}

/**
 * Resolves the credentials of one kind. API keys are resolved in authenticate.ts; the kinds other services own
 * (grant tokens in `gate`, agent keys in `agentlink`, user sessions) add a resolver that asks them.
 */
export interface CredentialResolver<Answer extends Presented = Presented> {
  kind: CredentialKindName;
  /** Whether a bearer value has this kind's form (by prefix); the first resolver that recognises it decides. */
  recognizes(credential: string): boolean;
  resolve(credential: string, request: CredentialRequest): Promise<Answer>;
}
