import type { Clock } from "@svc/platform";

/**
 * The share of `ttlMs` an entry's life may fall short of it, drawn per entry: answers cached together (every
 * hot key in a gateway's first second) are then not all asked for again in the same instant every `ttlMs`.
 */
const lifeSpread = 0.2;

/**
 * A small least-recently-used map whose entries live `ttlMs` by the injected clock, less up to a fifth drawn
 * per entry: the gateway's memory of another service's recent answers, so a hot credential costs no round
 * trip per request. A change (a revoked agent) is forgotten at once when its owner says so (`forget`), and
 * within `ttlMs` when that word is lost. At most `capacity` entries; the least recently used goes first.
 */
export class AnswerCache<V> {
  readonly #entries = new Map<string, { value: V; expiresAt: number }>();
  readonly #clock: Clock;
  readonly #ttlMs: number;
  readonly #capacity: number;
  readonly #random: () => number;

  constructor(options: { clock: Clock; ttlMs: number; capacity: number; random?: () => number }) {
    this.#clock = options.clock;
    this.#ttlMs = options.ttlMs;
    this.#capacity = options.capacity;
    this.#random = options.random ?? Math.random;
  }

  get(key: string): V | undefined {
    const entry = this.#entries.get(key);
    if (!entry) return undefined;
    this.#entries.delete(key);
    if (entry.expiresAt <= this.#clock.now().getTime()) return undefined;
    this.#entries.set(key, entry);
    return entry.value;
  }

  /** Kept 80-100% of `ttlMs`, or until `until` when that is sooner (the answer itself ends then). */
  set(key: string, value: V, until?: Date): void {
    if (this.#ttlMs <= 0) return;
    this.#entries.delete(key);
    const expiresAt = this.#clock.now().getTime() + this.#ttlMs * (1 - lifeSpread * this.#random());
    this.#entries.set(key, { value, expiresAt: until ? Math.min(expiresAt, until.getTime()) : expiresAt });
    for (const oldest of this.#entries.keys()) {
      if (this.#entries.size <= this.#capacity) break;
      this.#entries.delete(oldest);
    }
  }

  /** Drops every entry whose value `matches`; every entry without one. */
  forget(matches?: (value: V) => boolean): void {
    for (const [key, entry] of this.#entries) if (!matches || matches(entry.value)) this.#entries.delete(key);
  }

  get size(): number {
    return this.#entries.size;
  }
}
