import type { KeyObject } from "node:crypto";
import { type EnvironmentName, keyedHash } from "@svc/platform";

const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const handleLength = 12;

/**
 * The handle of a person at a partner platform, `OP_` and 12 base62 characters: the only thing a
 * partner learns about the person who secured an account. It is derived (HMAC-SHA256 under
 * ACCOUNT_REF_PEPPER over platform and person), so relinking after any unlink gives the same handle
 * (decisions.md "The handle across relinks"), while two platforms get unrelated handles for one person
 * and a deleted person's id, once erased, derives nothing any more. The 256-bit hash reduced modulo
 * 62^12 is uniform to within 2^-184.
 */
export function handleFor(
  pepper: KeyObject,
  link: { organizationId: string; environment: EnvironmentName; svcUserId: string },
): string {
  const digest = keyedHash(
    pepper,
    `handle\u0000${link.organizationId}\u0000${link.environment}\u0000${link.svcUserId}`,
  );
  let value = BigInt(`0x${digest.toString("hex")}`);
  let text = "";
  for (let i = 0; i < handleLength; i++) {
    text += alphabet.charAt(Number(value % 62n));
    value /= 62n;
  }
  return `OP_${text}`;
}
