import type { CredentialDirectory } from "../credentials/directory.ts";

type Directory = Pick<CredentialDirectory, "organizationNames">;

/** What the app needs of organizations: their names, and the cached one at once where a wake must not wait. */
export interface OrganizationNames extends Directory {
  /** The remembered name, without asking anyone; one past its time is still answered, and refreshed meanwhile. */
  cachedName(id: string): string | undefined;
  /** Looks the name up now, unless it is remembered, so that a later `cachedName` has it. Never throws. */
  warm(id: string): void;
}

/**
 * The directory's organization names, remembered for `ttlMs` (default 10 minutes), at most `max`
 * organizations (default 10,000; the oldest is forgotten first). Names change rarely (the gateway has no
 * rename today), so the inbox names partners without a query on most reads, and a told inbox change
 * (`InboxFollower`) takes the name from here synchronously: a name past its time is answered as it was
 * while one background query refreshes it, so no wake ever waits for the directory once an organization
 * has been seen (create-verification-link warms it as gate answers the request). An id the
 * directory does not know is not remembered: it is asked again next time.
 */
export class OrganizationNameCache implements OrganizationNames {
  readonly #directory: Directory;
  readonly #ttlMs: number;
  readonly #max: number;
  readonly #now: () => number;
  readonly #known = new Map<string, { name: string; until: number }>();
  /** Ids asked of the directory right now, so a burst of wakes or warms asks once. */
  readonly #asking = new Set<string>();

  constructor(directory: Directory, options: { ttlMs?: number; max?: number; now?: () => number } = {}) {
    this.#directory = directory;
    this.#ttlMs = options.ttlMs ?? 600_000;
    this.#max = options.max ?? 10_000;
    this.#now = options.now ?? (() => performance.now());
  }

  async organizationNames(ids: readonly string[]): Promise<Map<string, string>> {
    const names = new Map<string, string>();
    const unknown: string[] = [];
    for (const id of new Set(ids)) {
      const name = this.cachedName(id);
      if (name === undefined) unknown.push(id);
      else names.set(id, name);
    }
    if (unknown.length === 0) return names;
    for (const [id, name] of await this.#ask(unknown)) names.set(id, name);
    return names;
  }

  cachedName(id: string): string | undefined {
    const known = this.#known.get(id);
    if (known && known.until <= this.#now() && !this.#asking.has(id)) this.#refresh([id]);
    return known?.name;
  }

  warm(id: string): void {
    if (!this.#known.has(id) && !this.#asking.has(id)) this.#refresh([id]);
  }

  #refresh(ids: string[]): void {
    // A failed refresh keeps what is known; the next sighting asks again.
    this.#ask(ids).catch(() => undefined);
  }

  async #ask(ids: string[]): Promise<Map<string, string>> {
    for (const id of ids) this.#asking.add(id);
    try {
      const found = await this.#directory.organizationNames(ids);
      const until = this.#now() + this.#ttlMs;
      for (const [id, name] of found) {
        this.#known.delete(id);
        this.#known.set(id, { name, until });
      }
      for (const oldest of this.#known.keys()) {
        if (this.#known.size <= this.#max) break;
        this.#known.delete(oldest);
      }
      return found;
    } finally {
      for (const id of ids) this.#asking.delete(id);
    }
  }
}
