import type { EnvironmentName } from "@svc/platform";
import type pg from "pg";
import { RecentFacts } from "../recent-facts.ts";
import { type Gate, type GateRow, gateFromRow } from "./gate-store.ts";

/** A gate's facts that never change after it is created: everything but its status and its notarize offer. */
export type GateFacts = Pick<Gate, "id" | "organizationId" | "environment" | "key" | "type" | "ageThreshold">;

/**
 * The gates create-verification-link names, remembered once read. What an operator switches is never
 * taken from here: the statement that creates a request checks the status, and `offersNotarize` reads
 * the offer.
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
    const {
      status: _status,
      notarizeOffer: _notarizeOffer,
      createdAt: _createdAt,
      updatedAt: _updatedAt,
      ...facts
    } = gateFromRow(row);
    this.#recent.remember(name, facts);
    return facts;
  }

  /**
   * Whether the gate offers securing an account now, read every time: the console switches it
   * (`SetNotarizeOffer`), and a request created after the switch follows it on every replica. Asked
   * only by requests that ask to secure an account, so the common create never pays for it.
   */
  async offersNotarize(gateId: string): Promise<boolean> {
    const { rows } = await this.#db.query<{ notarize_offer: boolean }>({
      name: "gate_notarize_offer",
      text: `select notarize_offer from gates where id = $1`,
      values: [gateId],
    });
    return rows[0]?.notarize_offer ?? false;
  }
}
