/**
 * Facts that never change once written (a session's owner, kind and partner-user hash; a gate's id,
 * type and threshold), remembered for the hot path of create-verification-link so it need not read
 * them again. Anything that can change (a token's use, a gate's status) is never taken from here; the
 * statement that acts checks it.
 *
 * Bounded by generations: the latest `max` entries are always kept, and when the current generation
 * fills, the one before it is dropped whole. That costs O(1) per entry, where evicting one oldest
 * entry at a time from a Map grows slower as deleted entries pile up at its front.
 */
export class RecentFacts<V> {
  readonly #max: number;
  #current = new Map<string, V>();
  #previous = new Map<string, V>();

  constructor(max: number) {
    this.#max = max;
  }

  get(key: string): V | undefined {
    return this.#current.get(key) ?? this.#previous.get(key);
  }

  remember(key: string, value: V): void {
    this.#current.set(key, value);
    if (this.#current.size >= this.#max) {
      this.#previous = this.#current;
      this.#current = new Map();
    }
  }
}
