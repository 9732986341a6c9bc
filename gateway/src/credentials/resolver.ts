import type { Caller } from "@svc/proto/common/v1/caller_pb.js";
import type { AuthenticatedCredential, AuthFailure, CredentialKindName } from "../http/credential.ts";

/** A bearer value resolved: who is calling, or why the credential is refused. */
export type Resolution =
  | { ok: true; credential: AuthenticatedCredential }
  | { ok: false; failure: AuthFailure; message: string };

/**
 * A grant token as presented, before gate has authenticated it: the operation hands `token` to gate,
 * which authenticates it in the same call (grant-token.ts).
 */
export interface PresentedGrant {
  readonly token: string;
  /** The request's scoped `Idempotency-Key` hash, or empty: gate then also accepts the token a create with it consumed. */
  readonly idempotencyToken: string;
  /** Who the token stands for, once gate has said. */
  readonly credential: AuthenticatedCredential | undefined;
  /** Gate authenticated the token as it accepted the operation, and named its caller. */
  accepted(caller: Caller | undefined): void;
  /** Asks gate who the token stands for, when the operation's own call did not tell. */
  confirm(): Promise<Resolution>;
}

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
