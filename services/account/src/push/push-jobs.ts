import { createHash } from "node:crypto";
import type { EntityManager } from "@mikro-orm/postgresql";
import type { Queryable } from "@svc/platform";

/** The push payload of decisions.md "Web Push": what the item is and a short title, nothing personal. */
export interface PushItem {
  kind: "card" | "request" | "notice";
  id: string;
  title: string;
  /** The item's end: the push's TTL is what is left of it, and no push goes out after it. */
  expiresAt: Date;
}

/**
 * RFC 8030 §5.4 Topic (at most 32 base64url characters): one per item, so a push sent again replaces the
 * one still waiting at the push service and the device shows it once.
 */
const topicOf = (item: Pick<PushItem, "kind" | "id">) =>
  createHash("sha256").update(`${item.kind}:${item.id}`).digest("base64url").slice(0, 32);

/** Cards and requests wait for the person, who has minutes to answer (RFC 8030 §5.3). */
const urgencyOf = (kind: PushItem["kind"]) => (kind === "notice" ? "normal" : "high");

const enqueueStatement = {
  name: "enqueue_push",
  text: `with subscriptions as (select id from push_subscription where svc_user_id = $1),
          added as (insert into push_job (subscription_id, topic, payload, urgency, expires_at, next_attempt_at)
                    select id, $2, $3::jsonb, $4, $5, $6 from subscriptions on conflict do nothing)
     select count(*)::int as n from subscriptions`,
};

/**
 * Writes, in one statement, one push of `item` for each of the person's web push subscriptions, for the
 * sender to deliver after the commit: on the statement pool (a trigger's push, on the way to the person's
 * screen, where the ORM's per-query work was a third of the time from trigger to push), or in the caller's
 * ORM transaction (a notice written with it). A trigger repeated for the same item adds nothing (one row per
 * subscription and topic). Answers how many subscriptions the item goes to.
 */
export async function enqueuePush(
  db: Queryable | EntityManager,
  svcUserId: string,
  item: PushItem,
  now: Date,
): Promise<number> {
  if (item.expiresAt <= now) return 0;
  const payload = JSON.stringify({ kind: item.kind, id: item.id, title: item.title });
  const values = [svcUserId, topicOf(item), payload, urgencyOf(item.kind), item.expiresAt, now];
  const rows =
    "query" in db
      ? (await db.query<{ n: number }>({ ...enqueueStatement, values })).rows
      : // The ORM binds by `?`; each numbered parameter appears once, in order.
        await db.execute<{ n: number }[]>(enqueueStatement.text.replace(/\$\d/g, "?"), values);
  return rows[0]?.n ?? 0;
}
