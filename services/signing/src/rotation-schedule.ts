/**
 * When each key of the ring is published, signs, retires and disappears. Pure functions of plain
 * values, so the windows are tested at their boundaries without a database or a clock.
 */
export interface KeyWindow {
  publishedAt: Date;
  signsFrom: Date;
  /** When the next key starts signing; null while this is the newest key. */
  retiredAt: Date | null;
  /** When the last token this key signed no longer needs verifying; null while it is the newest key. */
  unpublishAt: Date | null;
}

export type KeyState = "pending" | "active" | "retired" | "unpublished";

export interface RotationPolicy {
  /** How long a new key is published before it signs: at least one key-set cache lifetime. */
  publishLeadMs: number;
  /** How long a retired key stays published: its tokens' longest verifiable life. */
  retainMs: number;
}

export function keyState(window: KeyWindow, at: Date): KeyState {
  const t = at.getTime();
  if (t < window.publishedAt.getTime()) return "unpublished";
  if (t < window.signsFrom.getTime()) return "pending";
  if (window.retiredAt === null || t < window.retiredAt.getTime()) return "active";
  if (window.unpublishAt === null || t < window.unpublishAt.getTime()) return "retired";
  return "unpublished";
}

export const isPublished = (window: KeyWindow, at: Date): boolean => keyState(window, at) !== "unpublished";

/** The key that signs at `at`: of the active ones, the one that started last. */
export function signingKeyAt<K extends { window: KeyWindow }>(keys: Iterable<K>, at: Date): K | undefined {
  let chosen: K | undefined;
  for (const key of keys) {
    if (keyState(key.window, at) !== "active") continue;
    if (chosen === undefined || key.window.signsFrom > chosen.window.signsFrom) chosen = key;
  }
  return chosen;
}

/** The key every other key was succeeded by: the one that signs last. */
export function newestKey<K extends { window: KeyWindow }>(keys: Iterable<K>): K | undefined {
  let newest: K | undefined;
  for (const key of keys) {
    if (
      newest === undefined ||
      key.window.signsFrom > newest.window.signsFrom ||
      (key.window.signsFrom.getTime() === newest.window.signsFrom.getTime() &&
        key.window.publishedAt > newest.window.publishedAt)
    ) {
      newest = key;
    }
  }
  return newest;
}

export interface RotationPlan {
  window: KeyWindow;
  /** The end of the current newest key's signing, when there is one. */
  retirePrevious?: { retiredAt: Date; unpublishAt: Date };
}

/**
 * A new key signs one publish lead after now, so every verifier's cached key set already holds it;
 * the first key of an empty ring has no verifier to wait for and signs at once. The key it succeeds
 * stops signing at that instant and stays published for the retention.
 */
export function planRotation(newest: KeyWindow | undefined, now: Date, policy: RotationPolicy): RotationPlan {
  if (newest === undefined) return { window: { publishedAt: now, signsFrom: now, retiredAt: null, unpublishAt: null } };
  // Never start before the key it succeeds, even if the lead was shortened since that key was made.
  const signsFrom = new Date(Math.max(now.getTime() + policy.publishLeadMs, newest.signsFrom.getTime()));
  return {
    window: { publishedAt: now, signsFrom, retiredAt: null, unpublishAt: null },
    retirePrevious: { retiredAt: signsFrom, unpublishAt: new Date(signsFrom.getTime() + policy.retainMs) },
  };
}

/** The automatic schedule: a new key once the newest one is `everyMs` old (0 turns it off). */
export function rotationDue(newest: KeyWindow | undefined, now: Date, everyMs: number): boolean {
  if (newest === undefined) return true;
  return everyMs > 0 && now.getTime() - newest.publishedAt.getTime() >= everyMs;
}
