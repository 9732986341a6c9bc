import type { KeyObject } from "node:crypto";
import type { EntityManager } from "@mikro-orm/postgresql";
import { keyedHash } from "@svc/platform";
import { requireText } from "../input.ts";
import { refuse } from "../refusal.ts";

/** RFC 5321's longest path; a longer claim is no address anyone can inquire with. */
const longestAddress = 320;

/** HMAC-SHA256 under ACCOUNT_EMAIL_PEPPER of the lowercased address: inquire's `user_email` matches in any letter case. */
const emailHash = (pepper: KeyObject, address: string) => keyedHash(pepper, address.toLowerCase());

/**
 * What a sign-in identity keeps of a token's `email` and `email_verified` claims: the hash of a
 * verified address; `null` (cleared) for an unverified, empty or overlong one, which the provider no
 * longer vouches for; `undefined` (kept as it is) when the token carries no address, as access tokens
 * often do not.
 */
export function claimedEmailHash(
  pepper: KeyObject,
  claims: { email?: string | undefined; emailVerified: boolean },
): Buffer | null | undefined {
  if (claims.email === undefined) return undefined;
  if (!claims.emailVerified || claims.email === "" || claims.email.length > longestAddress) return null;
  return emailHash(pepper, claims.email);
}

/** The human whose identity came to hold this verified address last, or NotFound (as for an unknown svc_user_id). */
export async function findHumanByEmail(em: EntityManager, pepper: KeyObject, email: string): Promise<string> {
  const address = requireText(email, "email", Number.MAX_SAFE_INTEGER);
  if (address.length > longestAddress) throw refuse("not_found", "no person has that user_email");
  const [row] = await em.execute<{ svc_user_id: string }[]>(
    `select svc_user_id from sign_in_identity where email_hash = ? order by email_verified_at desc limit 1`,
    [emailHash(pepper, address)],
  );
  if (row === undefined) throw refuse("not_found", "no person has that user_email");
  return row.svc_user_id;
}
