import type { Clock } from "@svc/platform";
import webPush from "web-push";
import type { VapidKeys } from "./vapid-keys.ts";

/**
 * `web-push` signs its JWTs for 12 hours of the real time; one is signed again after half of that by our
 * clock, so a token sent is never near its end.
 */
const resignAfterMs = 6 * 3600_000;

/**
 * The `Authorization` header of RFC 8292 §3 for pushes to one push service (`audience`, its origin). The
 * JWT names only the origin, its end and our subject, so one signed token serves every push to that service
 * for its life (§2 lets a sender reuse it): an ECDSA signature per push service every six hours, instead of
 * one per push. Push services are a few known hosts (the endpoint policy), so the cache stays small.
 */
export function vapidAuthorization(vapid: VapidKeys, clock: Clock): (audience: string) => string {
  const signed = new Map<string, { authorization: string; resignAt: number }>();
  return (audience) => {
    const now = clock.now().getTime();
    const cached = signed.get(audience);
    if (cached !== undefined && now < cached.resignAt) return cached.authorization;
    const { Authorization } = webPush.getVapidHeaders(
      audience,
      vapid.subject,
      vapid.publicKey,
      vapid.privateKey,
      "aes128gcm",
    );
    signed.set(audience, { authorization: Authorization, resignAt: now + resignAfterMs });
    return Authorization;
  };
}
