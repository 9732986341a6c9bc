import type { MikroORM } from "@mikro-orm/postgresql";
import { TokenCheck } from "./token-check.entity.ts";

/** Without the ledger no check can be called first, so verification fails rather than guessing. */
export class ReplayLedgerUnavailableError extends Error {}

export interface ReplayLedger {
  /** Records a check of the token; true only for the first check of it, however many run at once. */
  recordCheck(tokenKey: Buffer, checkedAt: Date, expiresAt: Date): Promise<boolean>;
}

export function databaseReplayLedger(orm: MikroORM): ReplayLedger & { prune(expiredBefore: Date): Promise<number> } {
  return {
    async recordCheck(tokenKey, checkedAt, expiresAt) {
      // One statement, one round trip: the primary key decides which of concurrent checks is first.
      try {
        const rows = await orm.em
          .fork()
          .execute<{ payload_hash: Buffer }[]>(
            `insert into token_check (payload_hash, checked_at, expires_at) values (?, ?, ?) on conflict do nothing returning payload_hash`,
            [tokenKey, checkedAt, expiresAt],
          );
        return rows.length === 1;
      } catch (cause) {
        throw new ReplayLedgerUnavailableError("the replay ledger could not record the check", { cause });
      }
    },
    prune: (expiredBefore) => orm.em.fork().nativeDelete(TokenCheck, { expiresAt: { $lt: expiredBefore } }),
  };
}

/**
 * How long past its token's expiry a ledger row is kept. Replicas' clocks differ a little; a row
 * dropped while another replica still sees the token unexpired would let a replay pass as a first check.
 */
export const ledgerRetentionMarginMs = 10 * 60_000;
