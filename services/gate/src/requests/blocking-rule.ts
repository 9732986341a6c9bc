/**
 * The 409 rule (spec "Errors", "The 409 rule"): who a new request is checked as, here; which existing
 * requests block it, in `create-verification-requests.sql`, where the check runs atomically with the
 * write. revoke-verification ends exactly the requests that would block, naming the user the same way.
 * Each clause is tested against PostgreSQL in `test/blocking-rule.test.ts`.
 *
 * Clauses:
 * 1. The same user is the `partner_user_ref` sent to create-verification-link, else the
 *    `partner_user_id` sent to create-session.
 * 2. Only pending unexpired requests block; completed, failed, expired and pass ones never do (SQL).
 * 3. Requests with neither value, or naming no gate, are not checked.
 * 4. A browser request with a site key and no `partner_user_id` on the session is not checked.
 * 5. Clearing: revoke-verification with the same gate key and the user's reference as
 *    `partner_user_id` ends the blocking requests, after which the same grant token may create again.
 * Our addition: a presence ceremony (`parent_request_id`) is never blocked by its own pre-check,
 * which it replaces (SQL).
 */

type SessionCredentialKind = "secret_key" | "site_key";

interface NewRequestFacts {
  gate: string;
  /** `partner_user_ref` of create-verification-link. */
  partnerUserRef: string | undefined;
  /** `partner_user_id` of create-session. */
  sessionPartnerUserId: string | undefined;
  /** The credential that created the session. */
  sessionCredentialKind: SessionCredentialKind;
}

const given = (value: string | undefined): value is string => value !== undefined && value !== "";

/**
 * The user a new request is checked as (clauses 1, 3 and 4), or undefined when it is not checked.
 * A request that is not checked keeps no user, so it never blocks another one either.
 */
export function blockingUser(facts: NewRequestFacts): string | undefined {
  if (!given(facts.gate)) return undefined;
  if (facts.sessionCredentialKind === "site_key" && !given(facts.sessionPartnerUserId)) return undefined;
  if (given(facts.partnerUserRef)) return facts.partnerUserRef;
  if (given(facts.sessionPartnerUserId)) return facts.sessionPartnerUserId;
  return undefined;
}

/**
 * Clause 5: the user revoke-verification clears. Its `partner_user_id` names the user the same way
 * clause 1 does, so a request checked under a `partner_user_ref` is cleared by that value.
 */
export const revokedUser = (partnerUserId: string): string | undefined =>
  given(partnerUserId) ? partnerUserId : undefined;
