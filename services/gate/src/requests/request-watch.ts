import { create, toBinary } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { type EventBus, notificationSubject, publishInboxChanged } from "@svc/platform";
import { type InboxChanged, InboxRequestSchema } from "@svc/proto/common/v1/inbox_watch_pb.js";
import { RequestChangedSchema } from "@svc/proto/gate/v1/request_watch_pb.js";
import type pg from "pg";
import type { CreatedLink } from "./created-link.ts";

/** The notification's name; its subject and payload are documented in `request_watch.proto`. */
const requestChanged = "gate.request_changed";

type Bus = Pick<EventBus, "nc" | "subjectPrefix">;

/**
 * gate's one place for the wake-ups of a change to requests: each request's `RequestChanged`
 * (request_watch.proto) answers the status long-polls held for it, and an `InboxChanged`
 * (inbox_watch.proto) per request tells the person it names that it left their inbox (`request_ended`),
 * so their open inboxes drop it without reading. Call it after the transaction has committed. Core NATS
 * publishes, at most once and never throwing: a lost one (NATS down, this process killed before it) only
 * makes a wait run to its end.
 */
export function publishRequestsChanged(
  bus: Bus,
  rows: readonly { id: string; status: string; svc_user_id: string | null }[],
): void {
  const subject = notificationSubject(bus.subjectPrefix, requestChanged);
  for (const row of rows) {
    try {
      bus.nc.publish(
        subject,
        toBinary(RequestChangedSchema, create(RequestChangedSchema, { requestId: row.id, status: row.status })),
      );
    } catch {
      // The connection is closing or closed: see above.
    }
  }
  publishInboxChanged(
    bus,
    rows.map(({ id, status, svc_user_id }) => ({
      svcUserId: svc_user_id,
      // Every caller moves requests out of pending; one still pending (none today) only makes the inbox read again.
      change: status === "pending" ? undefined : { case: "requestEnded" as const, value: id },
    })),
  );
}

/**
 * create-verification-link for the person committed. A plain new pending request is told as it is
 * (`request_pending`), so their open inboxes add it without reading; a pass, or a presence ceremony
 * (which may have superseded its pending pre-check), makes them read again.
 */
export function publishRequestCreated(bus: Bus, svcUserId: string, link: CreatedLink, parentRequestId: string): void {
  publishInboxChanged(bus, [
    { svcUserId, change: link.status === "pending" && parentRequestId === "" ? pendingOf(link) : undefined },
  ]);
}

const pendingOf = (link: CreatedLink): InboxChanged["change"] => ({
  case: "requestPending",
  value: create(InboxRequestSchema, {
    requestId: link.requestId,
    organizationId: link.organizationId,
    ageGate: link.gate.type === "age",
    ageThreshold: link.gate.ageThreshold ?? undefined,
    notarizeOffered: link.notarizeOffered,
    expiresAt: timestampFromDate(link.expiresAt),
    createdAt: timestampFromDate(link.createdAt),
  }),
});

/**
 * A presence ceremony committed for `parentRequestId`: when that made the pending pre-check `expired`
 * (superseded), the status long-polls held for the pre-check are told, as for any other end. The create
 * statement does not say whether it superseded, so the pre-check is read once after the commit; only
 * ceremonies pay for it. Never throws: a missed wake-up only makes a wait run to its end.
 */
export async function publishSupersededParent(bus: Bus, db: pg.Pool, parentRequestId: string): Promise<void> {
  try {
    const { rows } = await db.query<{ id: string; status: string; svc_user_id: string | null }>(
      "select id, status, svc_user_id from requests where id = $1 and ended_by = 'superseded'",
      [parentRequestId],
    );
    publishRequestsChanged(bus, rows);
  } catch {
    // The pool is closing, or the database is briefly away: see above.
  }
}
