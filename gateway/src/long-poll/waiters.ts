/**
 * The long-polls this gateway holds for one kind of thing, by key: one map per kind for the whole
 * process, woken by the one subscription to its notifications (`notifications.ts`): check-status by
 * agent and card (`cardKey`, `T` a card's check-status answer), the verification status by request id.
 * A held wait costs a map entry, a promise and a timer; no connection, subscription or query of its own.
 */
export class Waiters<T> {
  readonly #held = new Map<string, Set<(answer?: T) => void>>();
  #closed = false;

  /** How many waits are held now. */
  get size(): number {
    let count = 0;
    for (const wakers of this.#held.values()) count += wakers.size;
    return count;
  }

  /**
   * The long-poll of one thing: `read` it; while `holdMs` of what was read is above 0, wait that long or
   * until it is said to have changed, and answer what the notification carries (or, without an answer,
   * `read` it again); when the time is up, or the gateway stops, `read` it again. The waiter is
   * registered before the first read, so a change committed between that read and the wait still wakes
   * it. A notification that never comes (lost between the owner's commit and its publish) only makes the
   * wait run to its end, and the second read answers what it is by then.
   */
  async hold(key: string, read: () => Promise<T>, holdMs: (first: T) => number): Promise<T> {
    let wake!: (answer?: T) => void;
    const woken = new Promise<T | undefined>((resolve) => {
      wake = resolve;
    });
    if (this.#closed) wake();
    else this.#add(key, wake);
    let timer: NodeJS.Timeout | undefined;
    try {
      const first = await read();
      const ms = holdMs(first);
      if (ms <= 0) return first;
      timer = setTimeout(wake, ms);
      return (await woken) ?? (await read());
    } finally {
      clearTimeout(timer);
      this.#remove(key, wake);
    }
  }

  /** It changed: its held waits answer `answer` now (or, without one, read it again). */
  wake(key: string, answer?: T): void {
    const wakers = this.#held.get(key);
    if (wakers) for (const wake of wakers) wake(answer);
  }

  /** The gateway stops: every held wait reads again now, and a later one does not wait. */
  close(): void {
    this.#closed = true;
    for (const wakers of this.#held.values()) for (const wake of wakers) wake();
  }

  #add(key: string, wake: (answer?: T) => void): void {
    const wakers = this.#held.get(key);
    if (wakers) wakers.add(wake);
    else this.#held.set(key, new Set([wake]));
  }

  #remove(key: string, wake: (answer?: T) => void): void {
    const wakers = this.#held.get(key);
    if (!wakers) return;
    wakers.delete(wake);
    if (wakers.size === 0) this.#held.delete(key);
  }
}

// request_id is a UUID, which agentlink stores (and notifies) in lower case whatever case the agent sent.
export const cardKey = (agentId: string, requestId: string) => `${agentId}/${requestId.toLowerCase()}`;
