import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { type InboxChanged, InboxChangedSchema, InboxPresenceSchema } from "@svc/proto/common/v1/inbox_watch_pb.js";
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
 * them answer again. A bare svc_user_id makes them read the inbox again (one message per person); one
 * with `change` says exactly what changed (inbox_watch.proto), and is sent as it is. Call it after the
 * transaction has committed. A core NATS publish, at most once and never throwing: a lost one (NATS
 * down, the process killed before it) only makes a long-poll run to its end.
 */
export function publishInboxChanged(
  bus: { nc: NatsConnection; subjectPrefix: string },
  changes: Iterable<string | null | undefined | { svcUserId: string | null; change?: InboxChanged["change"] }>,
): void {
  const subject = inboxChangedSubject(bus.subjectPrefix);
  const readAgain = new Set<string>();
  const messages: InboxChanged[] = [];
  for (const item of changes) {
    const { svcUserId, change } =
      typeof item === "object" && item !== null ? item : { svcUserId: item, change: undefined };
    if (!svcUserId) continue;
    if (change?.case === undefined) readAgain.add(svcUserId);
    else messages.push(create(InboxChangedSchema, { svcUserId, change }));
  }
  for (const svcUserId of readAgain) messages.push(create(InboxChangedSchema, { svcUserId }));
  for (const message of messages) {
    try {
      bus.nc.publish(subject, toBinary(InboxChangedSchema, message));
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
