export interface NaturalBatcherOptions<In, Out> {
  /** Does the work for a batch; answers one result per item, in the items' order. */
  run(items: In[]): Promise<Out[]>;
  /** Items per batch at most; more wait for the next one. */
  maxBatch: number;
  /**
   * A batch leaves at the end of the current turn of the event loop, also the one after a batch that
   * just ended, so the calls one turn makes (a burst of requests parsed from the reads of one poll)
   * share a batch instead of the first leaving alone.
   */
  gatherTurn?: boolean;
  /** Items sharing any key never travel in one batch: a later one waits for the next. */
  keys?(item: In): readonly string[];
  /**
   * `run` is all or nothing (one transaction): when a batch of several fails, each item is run again
   * alone, in order, so one item's failure (a constraint, a deadlock) is that item's and the others
   * succeed.
   */
  retryAlone?: boolean;
}

interface Waiting<In, Out> {
  item: In;
  keys: readonly string[];
  resolve(result: Out): void;
  reject(error: unknown): void;
}

/**
 * Coalesces concurrent calls into batches ("natural batching"). A call made while no batch is under
 * way leaves at once, alone, so a quiet service waits for no one; calls made while one is under way
 * queue and leave together when it ends. Under load each round trip, statement and commit then
 * carries many calls, and a quiet moment costs nothing.
 */
export class NaturalBatcher<In, Out> {
  readonly #options: NaturalBatcherOptions<In, Out>;
  #queue: Waiting<In, Out>[] = [];
  #busy = false;
  #gathering = false;

  constructor(options: NaturalBatcherOptions<In, Out>) {
    this.#options = options;
  }

  submit(item: In): Promise<Out> {
    return new Promise((resolve, reject) => {
      this.#queue.push({ item, keys: this.#options.keys?.(item) ?? [], resolve, reject });
      this.#dispatch();
    });
  }

  /** Sends the next batch now or, with gatherTurn, at the end of the current turn of the event loop. */
  #dispatch(): void {
    if (!this.#options.gatherTurn) {
      this.#next();
      return;
    }
    if (this.#busy || this.#gathering || this.#queue.length === 0) return;
    this.#gathering = true;
    setImmediate(() => {
      this.#gathering = false;
      this.#next();
    });
  }

  /** Sends the next batch unless one is under way; the end of each batch sends the next. */
  #next(): void {
    if (this.#busy) return;
    const batch = this.#take();
    if (batch.length === 0) return;
    this.#busy = true;
    void this.#settle(batch).finally(() => {
      this.#busy = false;
      this.#dispatch();
    });
  }

  /** The next batch in arrival order, leaving behind items whose keys an earlier item of it holds. */
  #take(): Waiting<In, Out>[] {
    const { maxBatch } = this.#options;
    const held = new Set<string>();
    const batch: Waiting<In, Out>[] = [];
    const left: Waiting<In, Out>[] = [];
    for (const waiting of this.#queue) {
      if (batch.length < maxBatch && !waiting.keys.some((key) => held.has(key))) {
        for (const key of waiting.keys) held.add(key);
        batch.push(waiting);
      } else left.push(waiting);
    }
    this.#queue = left;
    return batch;
  }

  async #settle(batch: Waiting<In, Out>[]): Promise<void> {
    try {
      const results = await this.#options.run(batch.map((w) => w.item));
      if (results.length !== batch.length)
        throw new Error(`a batch of ${batch.length} answered ${results.length} results`);
      let next = 0;
      for (const result of results) {
        const waiting = batch[next++];
        if (waiting === undefined) throw new Error("a batch answered more results than items");
        waiting.resolve(result);
      }
    } catch (error) {
      if (this.#options.retryAlone && batch.length > 1) for (const waiting of batch) await this.#settle([waiting]);
      else for (const waiting of batch) waiting.reject(error);
    }
  }
}
