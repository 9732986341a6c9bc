import type { KeyObject } from "node:crypto";
import { type EnvironmentName, keyedHash } from "@svc/platform";

/**
 * The partner's reference for its user is stored only as HMAC-SHA256 under ACCOUNT_REF_PEPPER. The
 * organization and environment are hashed with it, so one reference used by two platforms gives two
 * unrelated hashes and the table cannot relate them.
 */
export function partnerReferenceHash(
  pepper: KeyObject,
  account: { organizationId: string; environment: EnvironmentName; partnerUserRef: string },
): Buffer {
  return keyedHash(pepper, `${account.organizationId}\u0000${account.environment}\u0000${account.partnerUserRef}`);
}
