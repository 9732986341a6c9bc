import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { InboxChangedSchema, InboxPresenceSchema } from "@svc/proto/common/v1/inbox_watch_pb.js";
import type { NatsConnection } from "./nats.ts";
import { notificationSubject } from "./nats.ts";

/** The subject of `InboxChanged` (inbox_watch.proto): the one every gateway hears. */
export const inboxChangedSubject = (subjectPrefix: string): string =>
  notificationSubject(subjectPrefix, "inbox.changed");

/** The subject one person's presence request goes to; a gateway listens on it only while it holds their inbox open. */
export const inboxPresenceSubject = (subjectPrefix: string, svcUserId: string): string =>
  notificationSubject(subjectPrefix, `inbox.presence.${svcUserId}`);

/**
 * Tells the gateways that these people's inboxes changed, so the long-polls and event streams held for
 * them read their inbox again. Call it after the transaction has committed. A core NATS publish, at most
 * once and never throwing: a lost one (NATS down, the process killed before it) only makes a long-poll
 * run to its end.
 */
export function publishInboxChanged(
  bus: { nc: NatsConnection; subjectPrefix: string },
  svcUserIds: Iterable<string | null | undefined>,
): void {
  const subject = inboxChangedSubject(bus.subjectPrefix);
  for (const svcUserId of new Set(svcUserIds)) {
    if (!svcUserId) continue;
    try {
      bus.nc.publish(subject, toBinary(InboxChangedSchema, create(InboxChangedSchema, { svcUserId })));
    } catch {
      // The connection is closing or closed: see above.
    }
  }
}

/**
 * How many inbox connections (long-polls and event streams) of this person the gateways hold now: a
 * scatter-gather request answered by each gateway that holds one. When none does, the NATS server
 * answers "no responders" at once, so asking costs one round trip to the server. Otherwise the answers
 * are collected until `stallMs` pass without another (or `maxWaitMs` without any). Never throws: NATS
 * unreachable counts 0.
 */
export async function countOpenInboxes(
  nc: NatsConnection,
  subjectPrefix: string,
  svcUserId: string,
  options: { stallMs: number; maxWaitMs: number },
): Promise<number> {
  let open = 0;
  try {
    const answers = await nc.requestMany(inboxPresenceSubject(subjectPrefix, svcUserId), undefined, {
      strategy: "stall",
      stall: options.stallMs,
      maxWait: options.maxWaitMs,
    });
    for await (const answer of answers) open += fromBinary(InboxPresenceSchema, answer.data).openInboxes;
  } catch {
    // No responders (nobody holds this inbox open), or NATS unreachable: what was counted stands.
  }
  return open;
}
