import { fromBinary } from "@bufbuild/protobuf";
import { inboxChangedSubject } from "@svc/platform";
import { InboxChangedSchema } from "@svc/proto/common/v1/inbox_watch_pb.js";
import type { NotificationHandler } from "./notifications.ts";
import type { Waiters } from "./waiters.ts";

/** `InboxChanged` (inbox_watch.proto), from gate, agentlink and account: the person's held inboxes read again. */
export const inboxNotifications = <T>(subjectPrefix: string, waiters: Waiters<T>): NotificationHandler => ({
  name: "inbox",
  subject: inboxChangedSubject(subjectPrefix),
  hear(data) {
    waiters.wake(fromBinary(InboxChangedSchema, data).svcUserId);
  },
});
