import { isUuid, type Queryable } from "@svc/platform";
import type { Agent } from "./agent.entity.ts";

/** What the events about an agent's cards say of it: set at registration, and no operation changes it. */
export type AgentNaming = Pick<Agent, "id" | "name" | "organizationId" | "environment">;

/** Agents remembered per generation; the latest this many are always kept. */
const generation = 10_000;

/**
 * An agent's naming facts for inquire's event, read once per process: they never change, so there is
 * nothing to go stale. Nothing that can change (the agent's status, which revocation sets) is kept here;
 * inquire's statement reads that on every call. Bounded by generations: when the current one fills,
 * the one before it is dropped whole.
 */
export class AgentNames {
  readonly #db: Queryable;
  #current = new Map<string, AgentNaming>();
  #previous = new Map<string, AgentNaming>();

  constructor(db: Queryable) {
    this.#db = db;
  }

  /** The agent's naming facts; undefined for an unknown agent (or an id that is not a uuid). */
  async of(agentId: string): Promise<AgentNaming | undefined> {
    const known = this.#current.get(agentId) ?? this.#previous.get(agentId);
    if (known) return known;
    if (!isUuid(agentId)) return undefined;
    const { rows } = await this.#db.query<{ name: string; organization_id: string; environment: Agent["environment"] }>(
      {
        name: "agent_naming",
        text: `select name, organization_id, environment from agent where id = $1`,
        values: [agentId],
      },
    );
    const row = rows[0];
    if (!row) return undefined;
    const naming = { id: agentId, name: row.name, organizationId: row.organization_id, environment: row.environment };
    this.#current.set(agentId, naming);
    if (this.#current.size >= generation) {
      this.#previous = this.#current;
      this.#current = new Map();
    }
    return naming;
  }
}
