import { codePoints, type VisibleText } from "./card-structure.ts";
import { Findings } from "./findings.ts";
import { findImpersonation } from "./impersonation-phrases.ts";
import { checkLinks } from "./links.ts";
import { checkCharacters } from "./text-rules.ts";
import type { Violation } from "./violation.ts";

const PERSON_LABEL_MAX = 64;

/**
 * An agent's name for the person it links (bind-session's `person_label`), screened by the rules card text meets,
 * since the person and the agent's other approvers read it: NFC, trimmed, 1 to 64 characters, one line, and no
 * finding of the character, link or impersonation rules, warnings included. Returns the label to store, or why it
 * is refused: with the trust layer's violations when its rules refused it.
 */
export function screenPersonLabel(raw: string): { label: string } | { refused: string; violations?: Violation[] } {
  const label = raw.normalize("NFC").trim();
  if (label === "") return { refused: "person_label is empty" };
  if (codePoints(label) > PERSON_LABEL_MAX)
    return { refused: `person_label is longer than ${PERSON_LABEL_MAX} characters` };
  const text: VisibleText = { path: "/person_label", text: label, multiline: false };
  const findings = new Findings();
  checkCharacters(text, findings);
  checkLinks(text, findings);
  if (/[\r\n]/.test(label)) findings.add("control_character", text.path, label);
  const impersonated = findImpersonation(label);
  if (impersonated !== undefined) findings.add("impersonation", text.path, label);
  // A card shows its warnings beside the text; a label has no such place, so a warning refuses it too.
  if (findings.list.length === 0) return { label };
  return {
    refused: `person_label is refused by the trust layer: ${findings.list.map((v) => v.explanation).join(" ")}`,
    violations: findings.list,
  };
}
