import type { EntityManager, MikroORM } from "@mikro-orm/postgresql";
import { type Clock, type EnvironmentName, uuid } from "@svc/platform";
import { refuse } from "../refusal.ts";
import { type GateStatus, parseGateStatus } from "./gate-status.ts";

export type GateType = "human" | "age";

export interface Gate {
  id: string;
  organizationId: string;
  environment: EnvironmentName;
  key: string;
  type: GateType;
  ageThreshold: number | null;
  status: GateStatus;
  notarizeOffer: boolean;
  createdAt: Date;
  updatedAt: Date;
}

export interface GateRow {
  id: string;
  organization_id: string;
  environment: EnvironmentName;
  key: string;
  type: GateType;
  age_threshold: number | null;
  status: GateStatus;
  notarize_offer: boolean;
  created_at: Date;
  updated_at: Date;
}

export const gateFromRow = (row: GateRow): Gate => ({
  id: row.id,
  organizationId: row.organization_id,
  environment: row.environment,
  key: row.key,
  type: row.type,
  ageThreshold: row.age_threshold,
  status: row.status,
  notarizeOffer: row.notarize_offer,
  createdAt: new Date(row.created_at),
  updatedAt: new Date(row.updated_at),
});

const uuidText = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** Gate keys are case-sensitive and kept exactly as given. */
const gateKeyText = /^\S{1,200}$/;

export interface NewGate {
  organizationId: string;
  environment: EnvironmentName;
  key: string;
  type: GateType;
  ageThreshold: number | undefined;
  /** draft, active or archived; draft when empty. */
  status: string;
  notarizeOffer: boolean;
}

function requireStatus(text: string): GateStatus {
  const status = parseGateStatus(text);
  if (!status) throw refuse("invalid", `status must be draft, active or archived, not ${JSON.stringify(text)}`);
  return status;
}

function requireOrganization(organizationId: string): void {
  if (!uuidText.test(organizationId)) throw refuse("invalid", "organization_id must be a UUID");
}

/** The gates of each organization and environment, as operators manage them in the console. */
export class GateStore {
  readonly #orm: MikroORM;
  readonly #clock: Clock;

  constructor(options: { orm: MikroORM; clock: Clock }) {
    this.#orm = options.orm;
    this.#clock = options.clock;
  }

  async create(input: NewGate): Promise<Gate> {
    requireOrganization(input.organizationId);
    if (!gateKeyText.test(input.key)) throw refuse("invalid", "key must be 1-200 characters without spaces");
    const status = requireStatus(input.status === "" ? "draft" : input.status);
    if (input.type === "age") {
      if (
        input.ageThreshold === undefined ||
        !Number.isInteger(input.ageThreshold) ||
        input.ageThreshold < 1 ||
        input.ageThreshold > 150
      )
        throw refuse("invalid", "an Age Gate needs an age_threshold between 1 and 150");
    } else if (input.ageThreshold !== undefined) {
      throw refuse("invalid", "age_threshold applies to Age Gates only");
    }
    const now = this.#clock.now();
    const rows = await this.#orm.em.fork().execute<GateRow[]>(
      `insert into gates (id, organization_id, environment, key, type, age_threshold, status, notarize_offer, created_at, updated_at)
       values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) on conflict (organization_id, environment, key) do nothing returning *`,
      [
        uuid(),
        input.organizationId,
        input.environment,
        input.key,
        input.type,
        input.type === "age" ? input.ageThreshold : null,
        status,
        input.notarizeOffer,
        now,
        now,
      ],
    );
    if (!rows[0]) throw refuse("conflict", `gate ${JSON.stringify(input.key)} already exists in ${input.environment}`);
    return gateFromRow(rows[0]);
  }

  async setStatus(
    organizationId: string,
    environment: EnvironmentName,
    key: string,
    statusText: string,
  ): Promise<Gate> {
    requireOrganization(organizationId);
    const status = requireStatus(statusText);
    const rows = await this.#orm.em
      .fork()
      .execute<GateRow[]>(
        `update gates set status = ?, updated_at = ? where organization_id = ? and environment = ? and key = ? returning *`,
        [status, this.#clock.now(), organizationId, environment, key],
      );
    if (!rows[0]) throw refuse("not_found", `no gate ${JSON.stringify(key)} in ${environment}`);
    return gateFromRow(rows[0]);
  }

  /** The console switch behind `notarize`; NotFound for a gate the organization lacks in that environment. */
  async setNotarizeOffer(
    organizationId: string,
    environment: EnvironmentName,
    key: string,
    notarizeOffer: boolean,
  ): Promise<Gate> {
    requireOrganization(organizationId);
    const rows = await this.#orm.em
      .fork()
      .execute<GateRow[]>(
        `update gates set notarize_offer = ?, updated_at = ? where organization_id = ? and environment = ? and key = ? returning *`,
        [notarizeOffer, this.#clock.now(), organizationId, environment, key],
      );
    if (!rows[0]) throw refuse("not_found", `no gate ${JSON.stringify(key)} in ${environment}`);
    return gateFromRow(rows[0]);
  }

  async list(organizationId: string, environment: EnvironmentName | undefined, statusText: string): Promise<Gate[]> {
    requireOrganization(organizationId);
    const status = statusText === "" ? undefined : requireStatus(statusText);
    const rows = await this.#orm.em
      .fork()
      .execute<GateRow[]>(
        `select * from gates where organization_id = ? and (?::text is null or environment = ?) and (?::text is null or status = ?) order by environment, key`,
        [organizationId, environment ?? null, environment ?? null, status ?? null, status ?? null],
      );
    return rows.map(gateFromRow);
  }
}

/** The gate with this key in the caller's environment, read inside the caller's unit of work. */
export async function findGate(
  em: EntityManager,
  organizationId: string,
  environment: EnvironmentName,
  key: string,
): Promise<Gate | undefined> {
  const rows = await em.execute<GateRow[]>(
    `select * from gates where organization_id = ? and environment = ? and key = ?`,
    [organizationId, environment, key],
  );
  return rows[0] ? gateFromRow(rows[0]) : undefined;
}
