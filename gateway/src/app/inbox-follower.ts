import type { InboxChange } from "../long-poll/notifications.ts";
import type { GatewayServices } from "../services.ts";
import { type HeldInbox, type Inbox, readHeldInbox, withRequestEnded, withRequestPending } from "./inbox-contents.ts";
import { platformsOf } from "./platforms.ts";

/** Requests told ended that a late "created pending" must not bring back; the oldest are forgotten past this. */
const endedRemembered = 1000;

/**
 * One held inbox (a long-poll or an event stream) following the person's `InboxChanged` wakes. It listens
 * from its creation, before the first read, so a change committed during a read is heard after it. It
 * keeps the inbox it last produced: a told change (gate's request created pending or left pending) is
 * applied to it without reading; a wake without one, or a change that cannot be applied exactly, reads
 * the inbox again, and the changes heard before that read began are covered by it and dropped.
 */
export class InboxFollower {
  readonly #services: GatewayServices;
  readonly #svcUserId: string;
  readonly #stopListening: () => void;
  /** Heard and not yet applied, in order; undefined = read again. */
  #heard: (InboxChange | undefined)[] = [];
  #held: HeldInbox | undefined;
  readonly #ended = new Set<string>();
  #interrupted = false;
  #waiting: (() => void) | undefined;

  constructor(services: GatewayServices, svcUserId: string) {
    this.#services = services;
    this.#svcUserId = svcUserId;
    this.#stopListening = services.inboxWaiters.listen(svcUserId, (change) => {
      this.#heard.push(change);
      this.#waiting?.();
    });
  }

  /** Whether a change was heard since the inbox was last produced. */
  get changed(): boolean {
    return this.#heard.length > 0;
  }

  /** Resolves when a change is heard (at once if one was), or when `interrupt` is called. */
  nextChange(): Promise<void> {
    if (this.changed || this.#interrupted) return Promise.resolve();
    return new Promise<void>((resolve) => {
      this.#waiting = () => {
        this.#waiting = undefined;
        resolve();
      };
    });
  }

  /** Ends the current and every later `nextChange` (time up, the client gone). */
  interrupt(): void {
    this.#interrupted = true;
    this.#waiting?.();
  }

  /** The inbox after every change heard so far: read at first, when `readAgain`, or when a change says to. */
  async inbox(options: { readAgain?: boolean } = {}): Promise<Inbox> {
    const heard = this.#heard.splice(0);
    let held = this.#held;
    if (options.readAgain || heard.includes(undefined)) held = undefined;
    for (const change of heard) {
      if (!held) break;
      held = await this.#apply(held, change as InboxChange);
    }
    this.#held = held ?? (await readHeldInbox(this.#services, this.#svcUserId));
    return this.#held.inbox;
  }

  stop(): void {
    this.#stopListening();
  }

  async #apply(held: HeldInbox, change: InboxChange): Promise<HeldInbox | undefined> {
    const now = this.#services.clock.now();
    if (change.case === "requestEnded") {
      this.#ended.add(change.value);
      for (const oldest of this.#ended) {
        if (this.#ended.size <= endedRemembered) break;
        this.#ended.delete(oldest);
      }
      return withRequestEnded(held, change.value, now);
    }
    const request = change.value;
    // Told late (a publisher's "ended" overtook it): the request is no longer pending.
    if (this.#ended.has(request.requestId)) return held;
    // The name is normally remembered (create-verification-link warmed it): the change then applies without waiting for anyone.
    const name = this.#services.organizations.cachedName(request.organizationId);
    const platform =
      name === undefined
        ? (await platformsOf(this.#services, [request.organizationId]))(request.organizationId)
        : { name };
    return withRequestPending(held, request, platform, now);
  }
}
