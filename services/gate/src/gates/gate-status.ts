/**
 * Gate status names: draft, active and archived. The names before the 3.0 rename are the gateway's
 * business (its rename window translates them, on its console too); this service knows only these.
 */
export type GateStatus = "draft" | "active" | "archived";

const gateStatuses: readonly GateStatus[] = ["draft", "active", "archived"];

/** A status given by an operator or a filter; undefined when it is not one of the names. */
export const parseGateStatus = (text: string): GateStatus | undefined => gateStatuses.find((status) => status === text);

/** Only an Active gate accepts requests. */
export const acceptsRequests = (status: GateStatus): boolean => status === "active";
