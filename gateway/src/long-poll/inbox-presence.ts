import { create, toBinary } from "@bufbuild/protobuf";
import { inboxPresenceSubject, type Logger, type NatsConnection, type Subscription } from "@svc/platform";
import { InboxPresenceSchema } from "@svc/proto/common/v1/inbox_watch_pb.js";

interface Open {
  count: number;
  subscription?: Subscription;
  /** Resolves once the NATS server knows this gateway answers for the person. */
  listening: Promise<void>;
}

/**
 * The inbox connections (long-polls and event streams) this gateway holds open, per person, answering
 * gate's presence requests (`countOpenInboxes`, inbox_watch.proto) so that `pushed_to_devices` counts
 * them. The gateway listens on a person's presence subject only while it holds one of their inboxes: when
 * nobody has one open anywhere, the NATS server answers gate "no responders" at once, and create-link
 * waits for nothing. One subscription per person with an open inbox is a few hundred bytes on this
 * connection and at the server.
 */
export class InboxPresence {
  readonly #open = new Map<string, Open>();
  readonly #subjectPrefix: string;
  readonly #logger: Logger;
  #nc: NatsConnection | undefined;

  constructor(options: { subjectPrefix: string; logger: Logger }) {
    this.#subjectPrefix = options.subjectPrefix;
    this.#logger = options.logger;
  }

  /** NATS is reached: answer for every person whose inbox is already open. */
  attach(nc: NatsConnection): void {
    this.#nc = nc;
    for (const [svcUserId, open] of this.#open) open.listening = this.#listen(svcUserId, open);
  }

  /** An inbox of the person opens; resolves once presence requests reach this gateway (at once without NATS). */
  async enter(svcUserId: string): Promise<void> {
    const existing = this.#open.get(svcUserId);
    if (existing) {
      existing.count++;
      return existing.listening;
    }
    const open: Open = { count: 1, listening: Promise.resolve() };
    this.#open.set(svcUserId, open);
    open.listening = this.#listen(svcUserId, open);
    return open.listening;
  }

  /** An inbox of the person closes; the last one stops answering for them. */
  leave(svcUserId: string): void {
    const open = this.#open.get(svcUserId);
    if (!open) return;
    if (--open.count > 0) return;
    this.#open.delete(svcUserId);
    open.subscription?.unsubscribe();
  }

  async #listen(svcUserId: string, open: Open): Promise<void> {
    const nc = this.#nc;
    if (!nc || nc.isClosed()) return;
    try {
      open.subscription = nc.subscribe(inboxPresenceSubject(this.#subjectPrefix, svcUserId), {
        callback: (error, message) => {
          if (error) return;
          message.respond(toBinary(InboxPresenceSchema, create(InboxPresenceSchema, { openInboxes: open.count })));
        },
      });
      await nc.flush();
    } catch (error) {
      // Not counted while NATS is away; the inbox itself still works.
      this.#logger.warn("inbox presence not announced", { error });
    }
  }
}
