import type { MikroORM } from "@mikro-orm/postgresql";
import { parse } from "./config.ts";

/**
 * Rows a table keeps only for a while: what is due, as an SQL condition over the table's own columns
 * with `?` placeholders for `params` (usually one cutoff instant), read on an index that exists for it.
 */
export interface RetentionRule {
  table: string;
  due: string;
  params: unknown[];
}

/**
 * Deletes at most `batchSize` due rows in one statement and answers how many went. The rows are picked
 * `for update skip locked`, so replicas pruning at once take different rows and none waits for another,
 * and a row another transaction holds is left for the next run. The statement costs what is due, not
 * the table's size, as long as `due` is answered by an index.
 */
export async function deleteDueBatch(orm: MikroORM, rule: RetentionRule, batchSize: number): Promise<number> {
  const [row] = await orm.em
    .fork()
    .execute<{ n: number }[]>(
      `with gone as (${dueBatchStatement(rule)} returning 1) select count(*)::int as n from gone`,
      [...rule.params, batchSize],
    );
  return row?.n ?? 0;
}

/** The batch's delete, with `?` placeholders for the rule's params and then the batch size: what plans are checked on. */
export const dueBatchStatement = (rule: RetentionRule) =>
  `delete from ${rule.table} where ctid = any(array(
     select ctid from ${rule.table} where ${rule.due} limit ? for update skip locked))`;

/** Batches until one comes back short: every due row is gone, or is held by another replica's batch. */
export async function deleteDue(orm: MikroORM, rule: RetentionRule, batchSize: number): Promise<number> {
  let deleted = 0;
  for (;;) {
    const n = await deleteDueBatch(orm, rule, batchSize);
    deleted += n;
    if (n < batchSize) return deleted;
  }
}

/** A retention period setting: a duration above 0 (`30d`, `24h`). */
export const retentionSetting = (defaultMs: number, description: string) => ({
  parse: (raw: string) => {
    const ms = parse.duration(raw);
    if (ms <= 0) throw new Error(`must be longer than 0: ${raw}`);
    return ms;
  },
  default: defaultMs,
  description,
});

/** Rows one retention statement deletes at most: few enough that it holds its locks briefly. */
export const batchSizeSetting = (description: string) => ({
  parse: (raw: string) => {
    const n = Number(raw);
    if (!Number.isInteger(n) || n < 1 || n > 100_000) throw new Error(`must be an integer from 1 to 100000: ${raw}`);
    return n;
  },
  default: 1000,
  description,
});
