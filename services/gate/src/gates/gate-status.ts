/**
 * Gate status names. The current names are draft, active and archived; during the alias window the
 * old names are accepted wherever a status is given or filtered on, and rows carry the old name beside
 * the new one. This module is the only place that knows the old names.
 */
export type GateStatus = "draft" | "active" | "archived";

export const gateStatuses: readonly GateStatus[] = ["draft", "active", "archived"];

const fromLegacy: Readonly<Record<string, GateStatus>> = {
  pending: "draft",
  pending_revisions: "draft",
  approved: "active",
  denied: "archived",
  cancelled: "archived",
};

/** The old name a row carries: several old names became one new name, so each new name shows one of them. */
const toLegacy: Readonly<Record<GateStatus, string>> = { draft: "pending", active: "approved", archived: "cancelled" };

/** A status given by an operator or a filter, in the new or the old spelling; undefined when it is neither. */
export function parseGateStatus(text: string): GateStatus | undefined {
  if ((gateStatuses as readonly string[]).includes(text)) return text as GateStatus;
  return fromLegacy[text];
}

export const legacyGateStatus = (status: GateStatus): string => toLegacy[status];

/** Only an Active gate accepts requests. */
export const acceptsRequests = (status: GateStatus): boolean => status === "active";
