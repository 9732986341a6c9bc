/**
 * The rename (alias) window of the spec's Versioning section, as one table. Everything the gateway does
 * about old names reads it: the alias stage (renaming requests, dual-serving results, deprecation
 * signals, refusing old names after the sunset) and the OpenAPI document (old names as deprecated).
 */

/** Old names stop working at this instant (read from the injected clock). */
export const sunset = new Date("2027-01-15T00:00:00Z");

export interface Rename {
  old: string;
  new: string;
}

/**
 * Gate status values before 3.0 and now. A result carries the first old value of its new one in the
 * legacy field (`draft` → `pending`); a filter accepts every old value.
 */
export const gateStatusRenames: readonly Rename[] = [
  { old: "pending", new: "draft" },
  { old: "pending_revisions", new: "draft" },
  { old: "approved", new: "active" },
  { old: "denied", new: "archived" },
  { old: "cancelled", new: "archived" },
];

export interface AliasRow extends Rename {
  /** The route (by its `operationId`) whose names these are. */
  operationId: string;
  /**
   * `body` (a POST's JSON) or `query` (a GET's parameters): the request may send `old` instead of `new`.
   * `result`: the result (`data.data`, or flat `data`) carries `old` beside `new`.
   */
  in: "body" | "query" | "result";
  /**
   * Renamed values. In a request (with `old` equal to `new` when only the values changed), an old value
   * of the field is read as its new one; in a result, `old` carries the old value of `new`'s value.
   */
  values?: readonly Rename[];
}

export const aliasTable: readonly AliasRow[] = [
  { operationId: "createVerificationLink", in: "body", old: "scope", new: "gate" },
  { operationId: "createVerificationLink", in: "body", old: "enroll", new: "notarize" },
  { operationId: "createVerificationLink", in: "result", old: "scope", new: "gate" },
  { operationId: "revokeVerification", in: "body", old: "scope", new: "gate" },
  { operationId: "getPartnerConfig", in: "query", old: "scope", new: "gate" },
  { operationId: "getPartnerConfig", in: "result", old: "scope", new: "gate" },
  { operationId: "getPartnerConfig", in: "result", old: "status_legacy", new: "status", values: gateStatusRenames },
];
