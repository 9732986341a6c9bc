import { createHash } from "node:crypto";
import { randomBase62, randomHex } from "@svc/platform";

/** `req_` followed by 32 hex characters (spec "Verification request"). */
export const newRequestId = (): string => `req_${randomHex(16)}`;
export const requestIdForm = /^req_[0-9a-f]{32}$/;

/**
 * The secret of a request's web_url and deep_link: whoever holds it may open the request. About 190
 * random bits, so an unsalted SHA-256 at rest is enough to make a database copy useless.
 */
export const newFlowSecret = (): string => randomBase62(32);
export const secretHash = (secret: string): Buffer => createHash("sha256").update(secret).digest();
