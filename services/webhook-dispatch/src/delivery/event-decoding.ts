import { fromBinary } from "@bufbuild/protobuf";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { environmentName } from "@svc/platform";
import { type Event, EventSchema } from "@svc/proto/events/v1/events_pb.js";
import { resolvedCardOf } from "../callbacks/resolved-card.ts";
import type { IncomingMessage } from "../messages/message-store.ts";
import { renderPayload } from "./payload-rendering.ts";

/** What an event envelope from the stream is to this build. */
export type DecodedEvent =
  | { kind: "message"; message: IncomingMessage }
  /** A payload case this build does not know (a newer producer): parked until a build that knows it starts. */
  | { kind: "unknown_type"; dedupKey: string }
  /** It breaks the event contract and can never become deliverable. */
  | { kind: "invalid"; reason: string; dedupKey?: string };

export function decodeEvent(data: Uint8Array): DecodedEvent {
  let event: Event;
  try {
    event = fromBinary(EventSchema, data);
  } catch {
    return { kind: "invalid", reason: "not a valid Event envelope" };
  }
  let rendering: ReturnType<typeof renderPayload>;
  try {
    rendering = renderPayload(event);
  } catch (error) {
    return {
      kind: "invalid",
      reason: `the payload cannot be rendered: ${(error as Error).message}`,
      dedupKey: event.dedupKey,
    };
  }
  if (rendering.kind === "unknown_type") {
    // A newer producer's type arrives as unknown fields; an envelope with none has no payload at all.
    if (!event.$unknown?.length)
      return { kind: "invalid", reason: "the envelope carries no payload", dedupKey: event.dedupKey };
    // Parked under its dedup key, so a redelivery parks nothing twice.
    if (!event.dedupKey) return { kind: "invalid", reason: "dedup_key is missing" };
    return { kind: "unknown_type", dedupKey: event.dedupKey };
  }
  if (rendering.kind === "invalid") return { kind: "invalid", reason: rendering.reason, dedupKey: event.dedupKey };
  if (!event.dedupKey) return { kind: "invalid", reason: "dedup_key is missing" };
  if (!event.organizationId) return { kind: "invalid", reason: "organization_id is missing", dedupKey: event.dedupKey };
  const occurredAt = event.occurredAt ? timestampDate(event.occurredAt) : null;
  if (occurredAt && Number.isNaN(occurredAt.getTime()))
    return { kind: "invalid", reason: "occurred_at is not a valid instant", dedupKey: event.dedupKey };
  return {
    kind: "message",
    message: {
      organizationId: event.organizationId,
      dedupKey: event.dedupKey,
      type: rendering.type,
      environment: environmentName(event.environment) ?? null,
      occurredAt,
      body: rendering.body,
      resolvedCard: resolvedCardOf(event),
    },
  };
}
