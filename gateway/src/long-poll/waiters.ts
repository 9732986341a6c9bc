/**
 * The waits this gateway holds for one kind of thing, by key: one map per kind for the whole process,
 * woken by the one subscription to its notifications (`notifications.ts`): check-status by agent and
 * card (`cardKey`), the verification status by request id, the person's inbox by `svc_user_id`. A held
 * wait costs a map entry, a promise and a timer; no connection, subscription or query of its own. `T` is
 * what a notification may carry for the woken waits to answer without reading again (a card's
 * check-status answer; what changed in an inbox, which `InboxFollower` applies); a wake without one
 * (every status wake) makes them read again.
 */
export class Waiters<T = never> {
  readonly #held = new Map<string, Set<(answer?: T) => void>>();
  #closed = false;

  /** How many waits are held now. */
  get size(): number {
    let count = 0;
    for (const wakers of this.#held.values()) count += wakers.size;
    return count;
  }

  /** Whether the gateway is stopping: a wait registered now is woken at once. */
  get closed(): boolean {
    return this.#closed;
  }

  /**
   * Calls `onWake` at every wake of `key` until the returned function is called (an event stream's
   * listener, held for the stream's whole life so that no change between two reads is missed). When the
   * gateway stops it is called once more, with `closed` then true.
   */
  listen(key: string, onWake: (answer?: T) => void): () => void {
    if (this.#closed) {
      queueMicrotask(() => onWake());
      return () => undefined;
    }
    const wakers = this.#held.get(key);
    if (wakers) wakers.add(onWake);
    else this.#held.set(key, new Set([onWake]));
    return () => {
      const current = this.#held.get(key);
      if (!current) return;
      current.delete(onWake);
      if (current.size === 0) this.#held.delete(key);
    };
  }

  /**
   * The long-poll of one thing: `read` it; while `holdMs` of what was read is above 0, wait that long or
   * until `key` is woken, and answer what the notification carries (or, without it, `read` again). When
   * the time is up, or the gateway stops, `read` again. The waiter is registered before the first read, so
   * a change committed between that read and the wait still wakes it. A notification that never comes
   * (lost between the owner's commit and its publish) only makes the wait run to its end, and the second
   * read answers what it is by then. When `signal` aborts (the client went away) the waiter is freed at
   * once and nothing is read again: the answer goes nowhere.
   */
  async hold<R = T>(
    key: string,
    read: () => Promise<R>,
    holdMs: (first: R) => number,
    signal?: AbortSignal,
  ): Promise<R | T> {
    let wake!: (answer?: T) => void;
    const woken = new Promise<T | undefined>((resolve) => {
      wake = resolve;
    });
    const stopListening = this.listen(key, (answer) => wake(answer));
    const abandon = () => wake();
    signal?.addEventListener("abort", abandon, { once: true });
    let timer: NodeJS.Timeout | undefined;
    try {
      const first = await read();
      const ms = holdMs(first);
      if (ms <= 0 || signal?.aborted) return first;
      timer = setTimeout(wake, ms);
      const answer = await woken;
      if (answer !== undefined) return answer;
      return signal?.aborted ? first : await read();
    } finally {
      clearTimeout(timer);
      stopListening();
      signal?.removeEventListener("abort", abandon);
    }
  }

  /** `key` changed: its held waits answer `answer` now (or, without one, read again). */
  wake(key: string, answer?: T): void {
    const wakers = this.#held.get(key);
    if (wakers) for (const wake of [...wakers]) wake(answer);
  }

  /** The gateway stops: every held wait reads again now, and a later one does not wait. */
  close(): void {
    this.#closed = true;
    for (const wakers of this.#held.values()) for (const wake of [...wakers]) wake();
  }
}

/** The key of a card's check-status long-polls. request_id is a UUID, which agentlink stores (and notifies) in lower case whatever case the agent sent. */
export const cardKey = (agentId: string, requestId: string): string => `${agentId}/${requestId.toLowerCase()}`;
