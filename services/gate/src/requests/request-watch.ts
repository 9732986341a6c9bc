import { create, toBinary } from "@bufbuild/protobuf";
import { type EventBus, notificationSubject } from "@svc/platform";
import { RequestChangedSchema } from "@svc/proto/gate/v1/request_watch_pb.js";

/** The notification's name; its subject and payload are documented in `request_watch.proto`. */
const requestChanged = "gate.request_changed";

/**
 * Tells the gateways that these requests changed status, so the status long-polls held for them answer
 * now. Call it after the transaction has committed. A core NATS publish, at most once and never
 * throwing: a lost one (NATS down, this process killed before it) only makes a wait run to its end.
 */
export function publishRequestsChanged(
  bus: Pick<EventBus, "nc" | "subjectPrefix">,
  rows: readonly { id: string; status: string }[],
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
}
