import type { EnvironmentName } from "@svc/platform";
import type pg from "pg";
import { RecentFacts } from "../recent-facts.ts";
import { type Gate, type GateRow, gateFromRow } from "./gate-store.ts";

/** A gate's facts that never change after it is created: everything but its status. */
export type GateFacts = Pick<
  Gate,
  "id" | "organizationId" | "environment" | "key" | "type" | "ageThreshold" | "notarizeOffer"
>;

/**
 * The gates create-verification-link names, remembered once read. Only the status of a gate changes,
 * and it is never taken from here: the statement that creates a request checks it.
 */
export class GateFactsLookup {
  readonly #db: pg.Pool;
  readonly #recent = new RecentFacts<GateFacts>(5_000);

  constructor(db: pg.Pool) {
    this.#db = db;
  }

  async of(organizationId: string, environment: EnvironmentName, key: string): Promise<GateFacts | undefined> {
    const name = `${organizationId}\n${environment}\n${key}`;
    const known = this.#recent.get(name);
    if (known) return known;
    const { rows } = await this.#db.query<GateRow>({
      name: "gate_facts",
      text: `select * from gates where organization_id = $1 and environment = $2 and key = $3`,
      values: [organizationId, environment, key],
    });
    const row = rows[0];
    if (!row) return undefined;
    const { status: _status, createdAt: _createdAt, updatedAt: _updatedAt, ...facts } = gateFromRow(row);
    this.#recent.remember(name, facts);
    return facts;
  }
}
