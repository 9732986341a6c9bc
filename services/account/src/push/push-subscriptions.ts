import type { EntityManager } from "@mikro-orm/postgresql";
import { uuid } from "@svc/platform";
import { requireHuman } from "../humans/humans.ts";
import { requireUuid } from "../input.ts";
import { invalidArgument, refuse } from "../refusal.ts";
import { receiverKey } from "./push-encryption.ts";
import { checkPushEndpoint, type PushEndpointPolicy } from "./push-endpoint-policy.ts";
import type { PushSealing } from "./subscription-sealing.ts";

/** What a subscription row seals: a browser's PushSubscription (RFC 8030 endpoint, RFC 8291 keys). */
export interface SubscriptionSecret {
  endpoint: string;
  p256dh: string;
  auth: string;
}

export interface SubscriptionContext {
  em: EntityManager;
  sealing: PushSealing;
  policy: PushEndpointPolicy;
  now: Date;
}

export interface SubscriptionSummary {
  id: string;
  push_host: string;
  /** As the driver gives them for a raw statement. */
  created_at: string | Date;
  last_pushed_at: string | Date | null;
}

const base64urlBytes = (value: string, field: string, length: number, first?: number): void => {
  const bytes = /^[A-Za-z0-9_-]+={0,2}$/.test(value) ? Buffer.from(value, "base64url") : Buffer.alloc(0);
  if (bytes.length !== length || (first !== undefined && bytes[0] !== first))
    throw invalidArgument(
      `${field} must be base64url of ${length} bytes${first === undefined ? "" : " (an uncompressed P-256 point)"}`,
    );
};

/**
 * Registers a browser's subscription for the person. An endpoint names one browser installation:
 * registered again it stays one subscription with the new keys, and registered by another person (someone
 * else signed in on that browser) it moves to them, dropping what was still to be pushed to the previous one.
 */
export async function addPushSubscription(
  ctx: SubscriptionContext,
  input: { svcUserId: string } & SubscriptionSecret,
): Promise<string> {
  const url = checkPushEndpoint(input.endpoint, ctx.policy);
  base64urlBytes(input.p256dh, "keys.p256dh", 65, 0x04);
  base64urlBytes(input.auth, "keys.auth", 16);
  // A point off the curve could never be pushed to: refused now, not at every send.
  try {
    receiverKey(Buffer.from(input.p256dh, "base64url"));
  } catch {
    throw invalidArgument("keys.p256dh must be a point on P-256");
  }
  const human = await requireHuman(ctx.em, input.svcUserId);
  const endpointHash = ctx.sealing.endpointHash(input.endpoint);
  const secret = Buffer.from(JSON.stringify({ endpoint: input.endpoint, p256dh: input.p256dh, auth: input.auth }));
  return ctx.em.transactional(async (tx) => {
    const [existing] = await tx.execute<{ id: string; svc_user_id: string }[]>(
      `select id, svc_user_id from push_subscription where endpoint_hash = ? for update`,
      [endpointHash],
    );
    if (existing) {
      if (existing.svc_user_id !== human.id)
        await tx.execute(`delete from push_job where subscription_id = ?`, [existing.id]);
      await tx.execute(`update push_subscription set svc_user_id = ?, sealed = ?, push_host = ? where id = ?`, [
        human.id,
        ctx.sealing.seal(existing.id, secret),
        url.host,
        existing.id,
      ]);
      await dropOldest(tx, human.id);
      return existing.id;
    }
    const id = uuid();
    // A concurrent registration of the same endpoint that committed first wins; this one then changes nothing.
    const inserted = await tx.execute<{ id: string }[]>(
      `insert into push_subscription (id, svc_user_id, endpoint_hash, sealed, push_host, created_at)
       values (?, ?, ?, ?, ?, ?) on conflict (endpoint_hash) do nothing returning id`,
      [id, human.id, endpointHash, ctx.sealing.seal(id, secret), url.host, ctx.now],
    );
    if (inserted.length === 0) throw refuse("failed_precondition", "this endpoint is being registered concurrently");
    await dropOldest(tx, human.id);
    return id;
  });
}

/** Subscriptions a person keeps at most: a browser that stopped answering need not be removed by hand. */
const subscriptionsPerPerson = 10;

/** Keeps the person's newest subscriptions (their pushes still waiting go with the others). */
async function dropOldest(tx: EntityManager, svcUserId: string): Promise<void> {
  await tx.execute(
    `delete from push_subscription where id in (
       select id from push_subscription where svc_user_id = ? order by created_at desc, id desc offset ?)`,
    [svcUserId, subscriptionsPerPerson],
  );
}

/** The person's subscriptions, oldest first: where each one's pushes go (the push service's host), never the endpoint. */
export async function listPushSubscriptions(em: EntityManager, svcUserId: string): Promise<SubscriptionSummary[]> {
  const human = await requireHuman(em, svcUserId);
  return em.execute<SubscriptionSummary[]>(
    `select id, push_host, created_at, last_pushed_at from push_subscription
      where svc_user_id = ? order by created_at, id`,
    [human.id],
  );
}

/** Removes one of the person's subscriptions with what was still to be pushed to it; NotFound unless it is theirs. */
export async function removePushSubscription(
  em: EntityManager,
  input: { svcUserId: string; subscriptionId: string },
): Promise<void> {
  const id = requireUuid(input.subscriptionId, "subscription_id");
  const human = await requireHuman(em, input.svcUserId);
  const removed = await em.execute<{ id: string }[]>(
    `delete from push_subscription where id = ? and svc_user_id = ? returning id`,
    [id, human.id],
  );
  if (removed.length === 0) throw refuse("not_found", `no push subscription ${id} of this person`);
}
