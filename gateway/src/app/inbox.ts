import type { Logger } from "@svc/platform";
import { defineRoute, type EventSink, ok } from "../http/route.ts";
import type { GatewayServices } from "../services.ts";
import { type Inbox, inboxSchema, readInbox } from "./inbox-contents.ts";
import { sessionUserId } from "./session-user.ts";

/**
 * The person's live inbox (app API, signed-in session), read as a long-poll or as Server-Sent Events. Both
 * are held in this gateway (`inboxWaiters`, by svc_user_id) and woken by the services' `InboxChanged`
 * notifications (inbox_watch.proto); nothing reads the inbox meanwhile. While held, each counts as one open
 * inbox connection of the person (`inboxPresence`), which create-verification-link's `pushed_to_devices`
 * counts.
 */

const signedIn = { accepts: ["user_session"] } as const;

/** How often an idle event stream sends a comment, so proxies and the client know it is alive. */
const heartbeatMs = 15_000;

const inboxRoute = defineRoute({
  operationId: "appInbox",
  method: "GET",
  path: "/app/inbox",
  summary:
    "The signed-in person's inbox: pending gate requests naming them, queued agent cards, notices. Answered at once without cursor, or when cursor differs from the inbox's; else a long-poll: held until the inbox changes or wait_seconds (0-25, default 0) is up, then answered as it is.",
  auth: signedIn,
  input: {
    type: "object",
    properties: {
      wait_seconds: {
        type: "integer",
        minimum: 0,
        maximum: 25,
        description: "Default 0 (answer at once). Else the longest the answer waits for the inbox to change.",
      },
      cursor: {
        type: "string",
        maxLength: 64,
        description: "The cursor of the inbox the client shows: the answer waits while the inbox is still that.",
      },
    },
  },
  envelope: "nested",
  output: inboxSchema,
  async handle(input, { caller, services, signal }) {
    const svcUserId = sessionUserId(caller);
    const read = () => readInbox(services, svcUserId);
    const waitMs = (input.wait_seconds ?? 0) * 1000;
    if (waitMs === 0 || input.cursor === undefined) return ok(await read());
    await services.inboxPresence.enter(svcUserId);
    try {
      const held = (first: Inbox) => (first.cursor === input.cursor ? waitMs : 0);
      return ok(await services.inboxWaiters.hold(svcUserId, read, held, signal));
    } finally {
      services.inboxPresence.leave(svcUserId);
    }
  },
});

const inboxEventsRoute = defineRoute({
  operationId: "appInboxEvents",
  method: "GET",
  path: "/app/inbox/events",
  summary:
    "The signed-in person's inbox as Server-Sent Events (text/event-stream): `event: inbox` with `data:` the JSON GET /app/inbox answers in data.data, first at once, then at each change; a comment every 15 s. A refusal (no session) comes in the envelope instead.",
  auth: signedIn,
  input: { type: "object", properties: {} },
  envelope: "nested",
  produces: "text/event-stream",
  output: inboxSchema,
  async handle(_input, { caller, services, logger }) {
    const svcUserId = sessionUserId(caller);
    // Listening before the first read: a change committed while it runs is read again after it.
    const changes = listenForChanges(services, svcUserId);
    try {
      const first = await readInbox(services, svcUserId);
      return { kind: "stream", stream: (sink, signal) => streamInbox(services, logger, sink, signal, first, changes) };
    } catch (error) {
      changes.stop();
      throw error;
    }
  },
});

/** The wakes of one person's inbox, remembered while the stream is busy, so no change is missed. */
function listenForChanges(services: GatewayServices, svcUserId: string) {
  let pending = false;
  let waiting: (() => void) | undefined;
  const stopListening = services.inboxWaiters.listen(svcUserId, () => {
    pending = true;
    waiting?.();
  });
  const presence = services.inboxPresence.enter(svcUserId);
  let stopped = false;
  return {
    svcUserId,
    presence,
    /** Resolves at the next change (at once if one came since the last call), or when `interrupt` is called. */
    next: () =>
      new Promise<void>((resolve) => {
        if (pending) return resolve();
        waiting = resolve;
      }).then(() => {
        pending = false;
        waiting = undefined;
      }),
    /** Ends the current or the next wait (the client went away, perhaps while the inbox was being read). */
    interrupt: () => {
      pending = true;
      waiting?.();
    },
    stop: () => {
      if (stopped) return;
      stopped = true;
      stopListening();
      services.inboxPresence.leave(svcUserId);
    },
  };
}

/**
 * The first event at once, then one per change (a wake whose read shows the same inbox sends nothing),
 * until the client goes away or the gateway stops (both free the listener at once). A read that fails ends
 * the stream: the client reconnects and gets the refusal in the envelope.
 */
async function streamInbox(
  services: GatewayServices,
  logger: Logger,
  sink: EventSink,
  signal: AbortSignal,
  first: Inbox,
  changes: ReturnType<typeof listenForChanges>,
): Promise<void> {
  const heartbeat = setInterval(() => sink.comment("heartbeat"), heartbeatMs);
  signal.addEventListener("abort", changes.interrupt, { once: true });
  try {
    await changes.presence;
    if (signal.aborted) return;
    sink.send("inbox", first);
    let shown = first.cursor;
    for (;;) {
      await changes.next();
      if (signal.aborted || services.inboxWaiters.closed) return;
      const inbox = await readInbox(services, changes.svcUserId);
      if (inbox.cursor !== shown) sink.send("inbox", inbox);
      shown = inbox.cursor;
    }
  } catch (error) {
    logger.warn("inbox event stream ended: the inbox could not be read", { error });
  } finally {
    clearInterval(heartbeat);
    signal.removeEventListener("abort", changes.interrupt);
    changes.stop();
  }
}

export const inboxRoutes = [inboxRoute, inboxEventsRoute];
