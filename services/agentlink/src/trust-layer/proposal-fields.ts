import { codePoints, type VisibleText } from "./card-structure.ts";
import type { Findings } from "./findings.ts";

/** What the person sees besides the Adaptive Card; the canonical card is built from these fields only. */
export type ProposalFields = {
  summary_title: string;
  category: string;
  summary_detail?: { label: string; value: string };
  trusted_account_id?: string;
};

/**
 * The proposal's texts and their limits in characters (code points), as the interface spec gives them:
 * the one copy. The gateway documents them in its OpenAPI document but does not check them; it answers
 * inquire's `proposal_field_too_long` refusal ({@link overlongFields}) as the 400 its validation would give.
 */
const proposalFieldLimits = {
  "/action/summary_title": 120,
  "/action/category": 80,
  "/action/summary_detail/label": 40,
  "/action/summary_detail/value": 80,
} as const;
type LimitedField = keyof typeof proposalFieldLimits;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/**
 * Checks the proposal's own fields (the gateway's schema checks them first; the layer does not rely on it)
 * and returns them with their texts, or `undefined` when the body is not a proposal at all.
 */
export function readProposalFields(
  body: unknown,
  findings: Findings,
): { fields: ProposalFields; texts: VisibleText[]; payload: unknown } | undefined {
  if (!isRecord(body) || !isRecord(body.action)) {
    findings.add("body_invalid", isRecord(body) ? "/action" : "", isRecord(body) ? body.action : body);
    return undefined;
  }
  const action = body.action;
  const texts: VisibleText[] = [];
  const text = (value: unknown, path: LimitedField, label?: string): string => {
    const max = proposalFieldLimits[path];
    if (value === undefined) {
      findings.add("field_missing", path, "(missing)");
      return "";
    }
    if (typeof value !== "string" || value.length === 0 || tooLong(value, max)) {
      findings.add("field_invalid", path, value, `The field must be a string of 1 to ${max} characters.`);
      return typeof value === "string" ? value : "";
    }
    texts.push({ path, text: value, multiline: false, label });
    return value;
  };
  const fields: ProposalFields = {
    summary_title: text(action.summary_title, "/action/summary_title"),
    category: text(action.category, "/action/category"),
  };
  const detail = action.summary_detail;
  if (isRecord(detail)) {
    const label = text(detail.label, "/action/summary_detail/label");
    fields.summary_detail = { label, value: text(detail.value, "/action/summary_detail/value", label) };
  } else if (detail !== undefined) findings.add("field_invalid", "/action/summary_detail", detail);
  const account = action.trusted_account_id;
  if (typeof account === "string" && UUID.test(account)) fields.trusted_account_id = account;
  else if (account !== undefined)
    findings.add("field_invalid", "/action/trusted_account_id", account, "The field must be a uuid.");
  return { fields, texts, payload: body.adaptive_card_payload ?? undefined };
}

/** More than `max` code points; counted only between `max` and `max * 2` UTF-16 units (a code point is one or two). */
const tooLong = (text: string, max: number) => text.length > max && (text.length > max * 2 || codePoints(text) > max);

/**
 * The proposal's texts over their limits, in the order the spec lists the fields: what inquire refuses
 * before any other check. A text of another type or form is the screening's to reject, with the rest.
 */
export function overlongFields(body: unknown): { path: LimitedField; maxLength: number }[] {
  if (!isRecord(body) || !isRecord(body.action)) return [];
  const { action } = body;
  const detail = isRecord(action.summary_detail) ? action.summary_detail : {};
  const texts: [LimitedField, unknown][] = [
    ["/action/summary_title", action.summary_title],
    ["/action/category", action.category],
    ["/action/summary_detail/label", detail.label],
    ["/action/summary_detail/value", detail.value],
  ];
  return texts
    .filter(([path, value]) => typeof value === "string" && tooLong(value, proposalFieldLimits[path]))
    .map(([path]) => ({ path, maxLength: proposalFieldLimits[path] }));
}
