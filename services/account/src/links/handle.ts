import { randomBase62 } from "@svc/platform";

/**
 * A new handle, `OP_` and 12 base62 characters: the only thing a partner learns about the human who
 * secured an account. 62^12 values, so a collision (which the table's unique key refuses) is a retry.
 */
export const newHandle = (): string => `OP_${randomBase62(12)}`;
