import type { MikroORM } from "@mikro-orm/postgresql";
import { type Clock, deleteDue, type RetentionRule } from "@svc/platform";

/**
 * Cards that ended (resolved, denied, cancelled or expired: `resolved_at` is set on each) more than
 * `retentionMs` before `now`, on `card_by_resolution`; their audit rows go with them (on delete cascade).
 * A queued card has not ended and is never deleted here: the expire sweep ends it first.
 *
 * Why 430 days by default: a card is the evidence behind its Proof of Resolution (what the person saw,
 * `card_digest`, the audit of who did what), and a proof verifies for as long as its key is published:
 * the key signs for up to `SIGNING_ROTATE_EVERY` (30 days) and then stays published for
 * `SIGNING_PROOF_RETENTION` (400 days). Past that nobody can verify the proof against the key set, so
 * the card no longer backs anything a partner can check.
 */
export const cardRetentionRule = (now: Date, retentionMs: number): RetentionRule => ({
  table: "card",
  column: "resolved_at",
  before: new Date(now.getTime() - retentionMs),
});

export function pruneCards(orm: MikroORM, clock: Clock, retentionMs: number, batchSize: number): Promise<number> {
  return deleteDue(orm, cardRetentionRule(clock.now(), retentionMs), batchSize);
}
