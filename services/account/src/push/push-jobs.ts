import { createHash } from "node:crypto";
import type { EntityManager } from "@mikro-orm/postgresql";
import type { Queryable, StoredTraceContext } from "@svc/platform";

/** The push payload of decisions.md "Web Push": what the item is and a short title, nothing personal. */
export interface PushItem {
  kind: "card" | "request" | "notice";
  id: string;
  title: string;
  /** The item's end: the push's TTL is what is left of it, and no push goes out after it. */
  expiresAt: Date;
}

/** One push of one item to one subscription, as the sender sends it: its row and the subscription's sealed secret. */
export interface PushJob {
  subscription_id: string;
  topic: string;
  payload: unknown;
  urgency: "normal" | "high";
  /** As the driver gives it for a raw statement. */
  expires_at: string | Date;
  attempts: number;
  /** The trace of the work that asked for the push (a trigger's consumer span, an RPC's): each send continues it. */
  trace_context: StoredTraceContext;
  sealed: Buffer;
}

/**
 * RFC 8030 §5.4 Topic (at most 32 base64url characters): one per item, so a push sent again replaces the
 * one still waiting at the push service and the device shows it once.
 */
const topicOf = (item: Pick<PushItem, "kind" | "id">) =>
  createHash("sha256").update(`${item.kind}:${item.id}`).digest("base64url").slice(0, 32);

/** Cards and requests wait for the person, who has minutes to answer (RFC 8030 §5.3). */
const urgencyOf = (kind: PushItem["kind"]) => (kind === "notice" ? "normal" : "high");

/** One row per subscription of the person and item; a trigger repeated for the same item adds none. */
const insertJobs = `with subscriptions as (select id, sealed from push_subscription where svc_user_id = $1),
  added as (insert into push_job (subscription_id, topic, payload, urgency, expires_at, next_attempt_at, trace_context)
            select id, $2, $3::jsonb, $4, $5, $6, $7 from subscriptions on conflict do nothing
            returning subscription_id, topic, payload, urgency, expires_at, attempts, trace_context)`;

const parameters = (svcUserId: string, item: PushItem, dueAt: Date, traceContext: StoredTraceContext) => [
  svcUserId,
  topicOf(item),
  JSON.stringify({ kind: item.kind, id: item.id, title: item.title }),
  urgencyOf(item.kind),
  item.expiresAt,
  dueAt,
  traceContext,
];

/**
 * A trigger's pushes, one statement on the statement pool (on the way to the person's screen): one row per
 * subscription of the person, due at `dueAt`. Answers how many subscriptions the item goes to and the rows
 * this call wrote, with what the sender needs to send them: a caller that writes them leased to its own
 * sender (`dueAt` at the lease's end) hands them over at once, and no other sender takes them meanwhile.
 */
export async function writePushJobs(
  statements: Queryable,
  svcUserId: string,
  item: PushItem,
  now: Date,
  dueAt: Date,
  traceContext: StoredTraceContext,
): Promise<{ subscriptions: number; written: PushJob[] }> {
  if (item.expiresAt <= now) return { subscriptions: 0, written: [] };
  const { rows } = await statements.query<PushJob | { sealed: Buffer; topic: null }>({
    name: "write_push_jobs",
    text: `${insertJobs}
      select a.subscription_id, a.topic, a.payload, a.urgency, a.expires_at, a.attempts, a.trace_context, s.sealed
        from subscriptions s left join added a on a.subscription_id = s.id`,
    values: parameters(svcUserId, item, dueAt, traceContext),
  });
  return { subscriptions: rows.length, written: rows.filter((row): row is PushJob => row.topic !== null) };
}

/**
 * The pushes of an item written with it, in the caller's ORM transaction (a notice): due at once, for the
 * sender to take after the commit.
 */
export async function enqueuePush(
  tx: EntityManager,
  svcUserId: string,
  item: PushItem,
  now: Date,
  traceContext: StoredTraceContext,
): Promise<void> {
  if (item.expiresAt <= now) return;
  // The ORM binds by `?`; each numbered parameter appears once, in order.
  await tx.execute(`${insertJobs} select 1`.replace(/\$\d/g, "?"), parameters(svcUserId, item, now, traceContext));
}
