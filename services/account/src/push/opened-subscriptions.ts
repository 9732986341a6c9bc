import { type PushReceiver, receiverKey } from "./push-encryption.ts";
import { checkPushEndpoint, type PushEndpointPolicy } from "./push-endpoint-policy.ts";
import type { SubscriptionSecret } from "./push-subscriptions.ts";
import type { PushSealing } from "./subscription-sealing.ts";

/** Subscriptions kept opened: a burst's thousand and more, a few hundred bytes each. */
const capacity = 10_000;

export interface OpenedSubscription extends PushReceiver {
  url: URL;
}

/**
 * A subscription's sealed row opened, its endpoint checked against the policy and its keys decoded (the point
 * made a key), once, not on every push to it: kept by subscription id while the row's sealed bytes are the
 * same (a browser registering again rewrites them in place), the oldest dropped past `capacity`. An endpoint
 * the policy refuses is answered by its reason and not kept; a row that does not open throws, as before it
 * was kept.
 */
export function openedSubscriptions(
  sealing: PushSealing,
  policy: PushEndpointPolicy,
): (id: string, sealed: Buffer) => OpenedSubscription | { refused: string } {
  const opened = new Map<string, { sealed: Buffer; subscription: OpenedSubscription }>();
  return (id, sealed) => {
    const kept = opened.get(id);
    if (kept?.sealed.equals(sealed)) return kept.subscription;
    const secret = JSON.parse(sealing.open(id, sealed).toString()) as SubscriptionSecret;
    let url: URL;
    try {
      url = checkPushEndpoint(secret.endpoint, policy);
    } catch (error) {
      return { refused: (error as Error).message };
    }
    const p256dh = Buffer.from(secret.p256dh, "base64url");
    const subscription = { url, p256dh, key: receiverKey(p256dh), auth: Buffer.from(secret.auth, "base64url") };
    opened.delete(id);
    opened.set(id, { sealed, subscription });
    if (opened.size > capacity) opened.delete(opened.keys().next().value as string);
    return subscription;
  };
}
