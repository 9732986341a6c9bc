/**
 * The gate key, as create-verification-link, revoke-verification and partner-config take it. Its old
 * name `scope` is read as `gate` by the rename window before validation, so these see only `gate`.
 */
export const gateKeyField = {
  type: "string",
  minLength: 1,
  maxLength: 200,
  description: "The gate key (old name: scope).",
} as const;

/**
 * decisions.md `gate_required`: called with neither `gate` nor `scope`, these operations refuse in
 * `data.error` (HTTP 200), so a refused create-verification-link leaves its grant token usable like any
 * other refusal. A gate key that is present but malformed stays an `InputValidationError`.
 */
export const gateRequired = {
  gate: { code: "gate_required", message: "a gate key is required: send gate (old name: scope)" },
} as const;
