/**
 * Facts that never change once written (a session's owner, kind and partner-user hash; a gate's id,
 * type and threshold), remembered for the hot path of create-verification-link so it need not read
 * them again. Bounded: the oldest entry goes first. Anything that can change (a token's use, a gate's
 * status) is never taken from here; the statement that acts checks it.
 */
export class RecentFacts<V> {
  readonly #entries = new Map<string, V>();
  readonly #max: number;

  constructor(max: number) {
    this.#max = max;
  }

  get(key: string): V | undefined {
    return this.#entries.get(key);
  }

  remember(key: string, value: V): void {
    this.#entries.delete(key);
    this.#entries.set(key, value);
    if (this.#entries.size > this.#max) this.#entries.delete(this.#entries.keys().next().value!);
  }
}
