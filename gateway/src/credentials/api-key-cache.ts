import type { Clock } from "@svc/platform";
import { AnswerCache } from "./answer-cache.ts";
import type { CredentialDirectory } from "./directory.ts";
import type { ApiKey } from "./entities.ts";

/** The directory's key lookup behind a cache, and how the cache hears that a key changed (credential-changes.ts). */
export interface ApiKeyLookup {
  findKey(credential: string): Promise<ApiKey | undefined>;
  forgetKey(keyId: string): void;
  forgetAll(): void;
}

/**
 * Remembers the API keys the directory recognised for `ttlMs`, in a bounded cache keyed by the key's keyed
 * hash (never the key itself), so a hot key costs no statement per request. A revoked key is forgotten at
 * once (`forgetKey`: the console's own revoke, and every other replica's through CredentialChanged);
 * `ttlMs` bounds the delay only when that word is lost. An unknown key is not remembered: a made-up one
 * must not push the keys in use out.
 */
export function cachedApiKeys(options: {
  directory: Pick<CredentialDirectory, "keyHashOf" | "findKeyByHash">;
  clock: Clock;
  ttlMs: number;
  capacity?: number;
}): ApiKeyLookup {
  const cache = new AnswerCache<ApiKey>({
    clock: options.clock,
    ttlMs: options.ttlMs,
    capacity: options.capacity ?? 10_000,
  });
  // A key read before a change was heard may predate the change: it is used once, never kept.
  let changesHeard = 0;
  return {
    async findKey(credential) {
      const hash = options.directory.keyHashOf(credential);
      if (!hash) return undefined;
      const name = hash.toString("base64url");
      const remembered = cache.get(name);
      if (remembered) return remembered;
      const heardBefore = changesHeard;
      const key = await options.directory.findKeyByHash(hash);
      if (key && changesHeard === heardBefore) cache.set(name, key);
      return key;
    },
    forgetKey(keyId) {
      changesHeard++;
      cache.forget((key) => key.id === keyId);
    },
    forgetAll() {
      changesHeard++;
      cache.forget();
    },
  };
}
