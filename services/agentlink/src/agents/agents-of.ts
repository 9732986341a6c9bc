import type { EntityManager } from "@mikro-orm/postgresql";
import { Agent } from "./agent.entity.ts";

/**
 * The agents these rows name, read in one statement; none when no row names one. The ORM sends an empty
 * `$in` as a statement that finds nothing (`where 1 = 0`), which an empty inbox read made twice.
 */
export async function agentsOf(em: EntityManager, rows: readonly { agentId: string }[]): Promise<Agent[]> {
  const ids = [...new Set(rows.map((row) => row.agentId))];
  return ids.length === 0 ? [] : em.find(Agent, { id: { $in: ids } });
}
