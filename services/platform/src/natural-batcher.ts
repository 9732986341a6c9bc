export interface NaturalBatcherOptions<In, Out> {
  /** Does the work for a batch; answers one result per item, in the items' order. */
  run(items: In[]): Promise<Out[]>;
  /** Items per batch at most; more wait for the next one. */
  maxBatch: number;
  /** Batches under way at once at most (default 1). */
  maxInFlight?: number;
  /**
   * A call made while no batch is under way waits for the end of the current turn of the event loop,
   * so the calls one turn makes (a burst of requests parsed from one read) share its batch.
   */
  gatherTurn?: boolean;
  /** Items sharing any key never travel in one batch, nor in two under way at once: a later one waits. */
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
  readonly #maxInFlight: number;
  #queue: Waiting<In, Out>[] = [];
  #inFlight = 0;
  #gathering = false;
  /** Keys of the items in batches under way. */
  readonly #held = new Set<string>();

  constructor(options: NaturalBatcherOptions<In, Out>) {
    this.#options = options;
    this.#maxInFlight = options.maxInFlight ?? 1;
  }

  submit(item: In): Promise<Out> {
    return new Promise((resolve, reject) => {
      this.#queue.push({ item, keys: this.#options.keys?.(item) ?? [], resolve, reject });
      if (!this.#options.gatherTurn || this.#inFlight > 0) this.#pump();
      else if (!this.#gathering) {
        this.#gathering = true;
        setImmediate(() => {
          this.#gathering = false;
          this.#pump();
        });
      }
    });
  }

  #pump(): void {
    while (this.#inFlight < this.#maxInFlight) {
      const batch = this.#take();
      if (batch.length === 0) return;
      this.#inFlight++;
      void this.#settle(batch).finally(() => {
        this.#inFlight--;
        for (const waiting of batch) for (const key of waiting.keys) this.#held.delete(key);
        this.#pump();
      });
    }
  }

  /** The next batch in arrival order, leaving behind items whose keys are held by an item under way or earlier in it. */
  #take(): Waiting<In, Out>[] {
    const { maxBatch } = this.#options;
    const batch: Waiting<In, Out>[] = [];
    const left: Waiting<In, Out>[] = [];
    for (const waiting of this.#queue) {
      if (batch.length < maxBatch && !waiting.keys.some((key) => this.#held.has(key))) {
        for (const key of waiting.keys) this.#held.add(key);
        batch.push(waiting);
      } else left.push(waiting);
    }
    this.#queue = left;
    return batch;
  }

  async #settle(batch: Waiting<In, Out>[]): Promise<void> {
    try {
      const results = await this.#options.run(batch.map((w) => w.item));
      if (results.length !== batch.length) throw new Error(`a batch of ${batch.length} answered ${results.length} results`);
      batch.forEach((waiting, i) => waiting.resolve(results[i]!));
    } catch (error) {
      if (this.#options.retryAlone && batch.length > 1) for (const waiting of batch) await this.#settle([waiting]);
      else for (const waiting of batch) waiting.reject(error);
    }
  }
}
