import type { MikroORM } from "@mikro-orm/postgresql";
import { deleteDue, type Queryable, type RetentionRule } from "@svc/platform";

/** Without the ledger no check can be called first, so verification fails rather than guessing. */
export class ReplayLedgerUnavailableError extends Error {}

/** One check of a token that passed every other rule. */
export interface LedgerCheck {
  /** SHA-256 of the token's payload segment. */
  tokenKey: Buffer;
  /** The token's own expiry: the row is kept until a margin after it. */
  expiresAt: Date;
}

export interface ReplayLedger {
  /**
   * Records checks made at `checkedAt`, answering in their order: true only for the first check of a
   * token, however many run at once. Of copies of one token in the same call, only the first listed can be.
   */
  recordChecks(checks: readonly LedgerCheck[], checkedAt: Date): Promise<boolean[]>;
}

/** The ledger rows whose tokens expired before `expiredBefore`, found on `token_check_expires_at`. */
export const ledgerPruneRule = (expiredBefore: Date): RetentionRule => ({
  table: "token_check",
  column: "expires_at",
  before: expiredBefore,
});

/**
 * Records a call's checks: one prepared statement whatever the call's size (the rows come as arrays),
 * so PostgreSQL parses and plans it once per connection. The primary key decides which of concurrent
 * checks is first.
 */
const recordStatement = {
  name: "record_token_checks",
  text: `insert into token_check (payload_hash, checked_at, expires_at)
           select t.hash, $2::timestamptz, t.expires_at from unnest($1::bytea[], $3::timestamptz[]) with ordinality as t(hash, expires_at, i)
            order by t.i
           on conflict do nothing
           returning payload_hash`,
};

/**
 * The ledger in signing's schema. Checks are recorded through `statements`, a plain driver pool
 * (platform's `openStatementPool`): RecordTokenChecks is on every verify-token's path, and the ORM's
 * per-query work (formatting each value into the text) cost more than the insert. Pruning stays on the ORM.
 */
export function databaseReplayLedger(
  orm: MikroORM,
  statements: Queryable,
  pruneBatchSize: number,
): ReplayLedger & { prune(expiredBefore: Date): Promise<number> } {
  return {
    async recordChecks(checks, checkedAt) {
      if (checks.length === 0) return [];
      const byKey = new Map<string, LedgerCheck>();
      for (const check of checks) {
        const hex = check.tokenKey.toString("hex");
        if (!byKey.has(hex)) byKey.set(hex, check);
      }
      // Rows go in sorted by key, so concurrent writes that share tokens wait for each other in the same
      // order and cannot deadlock.
      const rows = [...byKey].sort(([a], [b]) => (a < b ? -1 : 1)).map(([, check]) => check);
      let inserted: { payload_hash: Buffer }[];
      try {
        ({ rows: inserted } = await statements.query<{ payload_hash: Buffer }>({
          ...recordStatement,
          values: [rows.map((row) => row.tokenKey), checkedAt, rows.map((row) => row.expiresAt)],
        }));
      } catch (cause) {
        throw new ReplayLedgerUnavailableError("the replay ledger could not record the checks", { cause });
      }
      const firsts = new Set(inserted.map((row) => row.payload_hash.toString("hex")));
      // Deleting as we go leaves `true` to the first listed copy of a token.
      return checks.map((check) => firsts.delete(check.tokenKey.toString("hex")));
    },
    // In batches, so a backlog (a replica down for hours under load) is never one long delete.
    prune: (expiredBefore) => deleteDue(orm, ledgerPruneRule(expiredBefore), pruneBatchSize),
  };
}

/**
 * How long past its token's expiry a ledger row is kept. Replicas' clocks differ a little; a row
 * dropped while another replica still sees the token unexpired would let a replay pass as a first check.
 */
export const ledgerRetentionMarginMs = 10 * 60_000;
