import type { CredentialDirectory } from "../credentials/directory.ts";

type Directory = Pick<CredentialDirectory, "organizationNames">;

/**
 * The directory's organization names, remembered for `ttlMs` (default 10 minutes), at most `max`
 * organizations (default 10,000; the oldest is forgotten first). Names change rarely (the gateway has no
 * rename today), so the inbox names partners without a query on most reads, and a told inbox change
 * needs none. An id the directory does not know is not remembered: it is asked again next time.
 */
export class OrganizationNameCache implements Directory {
  readonly #directory: Directory;
  readonly #ttlMs: number;
  readonly #max: number;
  readonly #now: () => number;
  readonly #known = new Map<string, { name: string; until: number }>();

  constructor(directory: Directory, options: { ttlMs?: number; max?: number; now?: () => number } = {}) {
    this.#directory = directory;
    this.#ttlMs = options.ttlMs ?? 600_000;
    this.#max = options.max ?? 10_000;
    this.#now = options.now ?? (() => performance.now());
  }

  async organizationNames(ids: readonly string[]): Promise<Map<string, string>> {
    const now = this.#now();
    const names = new Map<string, string>();
    const unknown: string[] = [];
    for (const id of new Set(ids)) {
      const known = this.#known.get(id);
      if (known && known.until > now) names.set(id, known.name);
      else unknown.push(id);
    }
    if (unknown.length === 0) return names;
    const found = await this.#directory.organizationNames(unknown);
    for (const [id, name] of found) {
      names.set(id, name);
      this.#known.delete(id);
      this.#known.set(id, { name, until: now + this.#ttlMs });
    }
    for (const oldest of this.#known.keys()) {
      if (this.#known.size <= this.#max) break;
      this.#known.delete(oldest);
    }
    return names;
  }
}
