import type pg from "pg";

/**
 * The plan PostgreSQL chooses for `sql` (MikroORM's `?` placeholders become `$1`, `$2`, …) with
 * these values: what the growth checks read for a Seq Scan on a table that grows. The caller fills the
 * table and runs `analyze` first, so the planner sees its real size.
 */
export async function planOf(db: Pick<pg.Pool, "query">, sql: string, values: unknown[]): Promise<string> {
  let n = 0;
  const numbered = sql.replaceAll("?", () => `$${++n}`);
  const { rows } = await db.query(`explain ${numbered}`, values);
  return rows.map((row: Record<string, string>) => row["QUERY PLAN"]).join("\n");
}
