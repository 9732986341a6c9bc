import { randomBase62 } from "@svc/platform";

/** `svcs_` plus 43 base62 characters (about 256 bits); only its SHA-256 is stored (see request-ids). */
export const newGrantToken = (): string => `svcs_${randomBase62(43)}`;
export const grantTokenForm = /^svcs_[A-Za-z0-9]{43}$/;
