import { createPrivateKey, sign } from "node:crypto";
import type { Clock } from "@svc/platform";
import type { VapidKeys } from "./vapid-keys.ts";

/** The JWT's life by our clock (RFC 8292 §2 allows at most 24 hours). */
const lifetimeSeconds = 12 * 3600;
/** One is signed again after half its life, so a token sent is never near its end. */
const resignAfterMs = (lifetimeSeconds / 2) * 1000;

const base64url = (value: object) => Buffer.from(JSON.stringify(value)).toString("base64url");
const header = base64url({ typ: "JWT", alg: "ES256" });

/**
 * The `Authorization` header of RFC 8292 §3 for pushes to one push service (`audience`, its origin). The
 * JWT names only the origin, its end and our subject, so one signed token serves every push to that service
 * for its life (§2 lets a sender reuse it): an ECDSA signature per push service every six hours, instead of
 * one per push. Push services are a few known hosts (the endpoint policy), so the cache stays small.
 * Signed here rather than by `web-push`, whose expiry reads the real time and refuses one set by our clock.
 */
export function vapidAuthorization(vapid: VapidKeys, clock: Clock): (audience: string) => string {
  const point = Buffer.from(vapid.publicKey, "base64url");
  const key = createPrivateKey({
    key: {
      kty: "EC",
      crv: "P-256",
      x: point.subarray(1, 33).toString("base64url"),
      y: point.subarray(33, 65).toString("base64url"),
      d: vapid.privateKey,
    },
    format: "jwk",
  });
  const signed = new Map<string, { authorization: string; resignAt: number }>();
  return (audience) => {
    const now = clock.now().getTime();
    const cached = signed.get(audience);
    if (cached !== undefined && now < cached.resignAt) return cached.authorization;
    const claims = base64url({ aud: audience, exp: Math.floor(now / 1000) + lifetimeSeconds, sub: vapid.subject });
    const signature = sign("sha256", Buffer.from(`${header}.${claims}`), { key, dsaEncoding: "ieee-p1363" });
    const authorization = `vapid t=${header}.${claims}.${signature.toString("base64url")}, k=${vapid.publicKey}`;
    signed.set(audience, { authorization, resignAt: now + resignAfterMs });
    return authorization;
  };
}
