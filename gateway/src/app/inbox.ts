import type { Logger } from "@svc/platform";
import { type EventSink, ok } from "../http/route.ts";
import type { GatewayServices } from "../services.ts";
import { defineRoute } from "../services.ts";
import { type Inbox, inboxSchema, readInbox } from "./inbox-contents.ts";
import { InboxFollower } from "./inbox-follower.ts";
import { sessionUserId } from "./session-user.ts";

/**
 * The person's live inbox (app API, signed-in session), read as a long-poll or as Server-Sent Events. Both
 * are held in this gateway (`inboxWaiters`, by svc_user_id) and woken by the services' `InboxChanged`
 * notifications (inbox_watch.proto); nothing reads the inbox meanwhile, and a wake that tells what changed
 * is applied to the inbox last answered without reading (`InboxFollower`). While held, each counts as one open
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
    const waitMs = (input.wait_seconds ?? 0) * 1000;
    if (waitMs === 0 || input.cursor === undefined) return ok(await readInbox(services, svcUserId));
    await services.inboxPresence.enter(svcUserId);
    const follower = new InboxFollower(services, svcUserId);
    const abandon = () => follower.interrupt();
    signal.addEventListener("abort", abandon, { once: true });
    let timer: NodeJS.Timeout | undefined;
    try {
      const first = await follower.inbox();
      if (first.cursor !== input.cursor || signal.aborted) return ok(first);
      timer = setTimeout(abandon, waitMs);
      await follower.nextChange();
      // Time up without a change: read again, in case a notification was lost. The client gone: nobody reads the answer.
      if (signal.aborted) return ok(first);
      return ok(await follower.inbox({ readAgain: !follower.changed }));
    } finally {
      clearTimeout(timer);
      signal.removeEventListener("abort", abandon);
      follower.stop();
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
    // Listening before the first read: a change committed while it runs is applied after it.
    const presence = services.inboxPresence.enter(svcUserId);
    const follower = new InboxFollower(services, svcUserId);
    let stopped = false;
    const stop = () => {
      if (stopped) return;
      stopped = true;
      follower.stop();
      services.inboxPresence.leave(svcUserId);
    };
    try {
      const first = await follower.inbox();
      return {
        kind: "stream",
        stream: (sink, signal) => streamInbox(services, logger, sink, signal, first, { follower, presence, stop }),
      };
    } catch (error) {
      stop();
      throw error;
    }
  },
});

/**
 * The first event at once, then one per change (a wake after which the inbox is the same sends nothing),
 * until the client goes away or the gateway stops (both free the listener at once). A read that fails ends
 * the stream: the client reconnects and gets the refusal in the envelope.
 */
async function streamInbox(
  services: GatewayServices,
  logger: Logger,
  sink: EventSink,
  signal: AbortSignal,
  first: Inbox,
  held: { follower: InboxFollower; presence: Promise<void>; stop: () => void },
): Promise<void> {
  const { follower } = held;
  const heartbeat = setInterval(() => sink.comment("heartbeat"), heartbeatMs);
  const interrupt = () => follower.interrupt();
  signal.addEventListener("abort", interrupt, { once: true });
  try {
    await held.presence;
    if (signal.aborted) return;
    sink.send("inbox", first);
    let shown = first.cursor;
    for (;;) {
      await follower.nextChange();
      if (signal.aborted || services.inboxWaiters.closed) return;
      const inbox = await follower.inbox();
      if (inbox.cursor !== shown) sink.send("inbox", inbox);
      shown = inbox.cursor;
    }
  } catch (error) {
    logger.warn("inbox event stream ended: the inbox could not be read", { error });
  } finally {
    clearInterval(heartbeat);
    signal.removeEventListener("abort", interrupt);
    held.stop();
  }
}

export const inboxRoutes = [inboxRoute, inboxEventsRoute];
