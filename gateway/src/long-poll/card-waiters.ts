/**
 * The check-status long-polls this gateway holds, keyed by agent and request_id: one map for the whole
 * process, woken by the one subscription to agentlink's card notifications (`card-notifications.ts`).
 * A held wait costs a map entry, a promise and a timer; no connection, subscription or query of its own.
 * `T` is a card's check-status answer.
 */
export class CardWaiters<T> {
  readonly #held = new Map<string, Set<(answer?: T) => void>>();
  #closed = false;

  /** How many waits are held now. */
  get size(): number {
    let count = 0;
    for (const wakers of this.#held.values()) count += wakers.size;
    return count;
  }

  /**
   * The long-poll of one card: `read` it; while `holdMs` of what was read is above 0, wait that long or
   * until the card is said to have left queued, and answer what the notification carries; when the time
   * is up, or the gateway stops, `read` it again. The waiter is registered before the first read, so a
   * change committed between that read and the wait still wakes it. A notification that never comes (lost
   * between agentlink's commit and its publish) only makes the wait run to its end, and the second read
   * answers what the card is by then.
   */
  async hold(
    card: { agentId: string; requestId: string },
    read: () => Promise<T>,
    holdMs: (first: T) => number,
  ): Promise<T> {
    const key = keyOf(card.agentId, card.requestId);
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

  /** The card left queued: its held waits answer `answer` now (or, without one, read the card again). */
  wake(agentId: string, requestId: string, answer?: T): void {
    const wakers = this.#held.get(keyOf(agentId, requestId));
    if (wakers) for (const wake of wakers) wake(answer);
  }

  /** The gateway stops: every held wait reads its card again now, and a later one does not wait. */
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
const keyOf = (agentId: string, requestId: string) => `${agentId}/${requestId.toLowerCase()}`;
