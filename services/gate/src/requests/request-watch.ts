import { create, toBinary } from "@bufbuild/protobuf";
import { type EventBus, notificationSubject, publishInboxChanged } from "@svc/platform";
import { RequestChangedSchema } from "@svc/proto/gate/v1/request_watch_pb.js";

/** The notification's name; its subject and payload are documented in `request_watch.proto`. */
const requestChanged = "gate.request_changed";

/**
 * gate's one place for the wake-ups of a change to requests: each request's `RequestChanged`
 * (request_watch.proto) answers the status long-polls held for it, and one `InboxChanged`
 * (inbox_watch.proto) per person they name makes that person's open inboxes read again. Call it after
 * the transaction has committed. Core NATS publishes, at most once and never throwing: a lost one (NATS
 * down, this process killed before it) only makes a wait run to its end.
 */
export function publishRequestsChanged(
  bus: Pick<EventBus, "nc" | "subjectPrefix">,
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
    rows.map((row) => row.svc_user_id),
  );
}

/** A request was created for the person (or a pass superseded their pending one): their open inboxes read again. */
export function publishRequestCreated(bus: Pick<EventBus, "nc" | "subjectPrefix">, svcUserId: string): void {
  publishInboxChanged(bus, [svcUserId]);
}
