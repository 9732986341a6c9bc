import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import type { NodeServerRequest } from "@svc/platform";

/**
 * The console port's operator credential: `Authorization: Bearer <token>` on every call. Only a keyed hash
 * of the configured token is kept (HMAC-SHA256 under a key made at start), and a presented token is hashed
 * the same way and compared in constant time, so neither its length nor its first differing byte shows.
 */
export function operatorCredential(token: string): (req: NodeServerRequest) => boolean {
  const key = randomBytes(32);
  const digest = (value: string) => createHmac("sha256", key).update(value, "utf8").digest();
  const expected = digest(token);
  return (req) => {
    const header = req.headers.authorization;
    const presented = typeof header === "string" ? /^Bearer ([\x21-\x7e]+)$/.exec(header)?.[1] : undefined;
    return presented !== undefined && timingSafeEqual(digest(presented), expected);
  };
}

export const operatorCredentialRefusal =
  "the console requires the operator credential: Authorization: Bearer <GATEWAY_CONSOLE_TOKEN> (svcctl reads SVCCTL_CONSOLE_TOKEN, else the file npm start writes, .data/console-token)";
