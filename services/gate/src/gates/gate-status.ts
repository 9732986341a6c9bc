/**
 * Gate status names. The current names are draft, active and archived; during the alias window the
 * old names are accepted wherever a status is given or filtered on, and rows carry the old name beside
 * the new one. This module is the only place in this service that knows the old names.
 */
export type GateStatus = "draft" | "active" | "archived";

export const gateStatuses: readonly GateStatus[] = ["draft", "active", "archived"];

/**
 * The spec's Versioning table, in its order, as the gateway's alias table has it for
 * `GET /sdk/partner-config`: several old names became one new name, and a row shows the first of them.
 */
export const gateStatusRenames: readonly { old: string; new: GateStatus }[] = [
  { old: "pending", new: "draft" },
  { old: "pending_revisions", new: "draft" },
  { old: "approved", new: "active" },
  { old: "denied", new: "archived" },
  { old: "cancelled", new: "archived" },
];

/** The spec's sunset: from this instant on rows carry no old name. */
export const renameSunset = new Date("2027-01-15T00:00:00Z");

/** A status given by an operator or a filter, in the new or the old spelling; undefined when it is neither. */
export function parseGateStatus(text: string): GateStatus | undefined {
  if ((gateStatuses as readonly string[]).includes(text)) return text as GateStatus;
  return gateStatusRenames.find((rename) => rename.old === text)?.new;
}

export const legacyGateStatus = (status: GateStatus): string =>
  gateStatusRenames.find((rename) => rename.new === status)!.old;

/** What a row carries beside `status` at `now`: its old name until the sunset, nothing from then on. */
export const legacyGateStatusAt = (status: GateStatus, now: Date): string | undefined =>
  now.getTime() < renameSunset.getTime() ? legacyGateStatus(status) : undefined;

/** Only an Active gate accepts requests. */
export const acceptsRequests = (status: GateStatus): boolean => status === "active";
