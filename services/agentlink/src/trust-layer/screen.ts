import { canonicalJson } from "@svc/contracts/canonical-json";
import { canonicalDigest, utf8 } from "@svc/contracts/card-digest";
import { checkAccounts } from "./accounts.ts";
import { checkAmounts } from "./amounts.ts";
import { serializedSizeAtLeast } from "./card-size.ts";
import { type VisibleText, walkCard } from "./card-structure.ts";
import type { ClassifierClient } from "./classifier-client.ts";
import { Findings } from "./findings.ts";
import { findImpersonations } from "./impersonation-phrases.ts";
import { limits } from "./limits.ts";
import { checkLinks } from "./links.ts";
import { type ProposalFields, readProposalFields } from "./proposal-fields.ts";
import { checkCharacters } from "./text-rules.ts";
import type { Violation } from "./violation.ts";

type Accepted = {
  kind: "accepted";
  /** RFC 8785 JSON of what the person sees: the app renders exactly this text. */
  canonicalCard: string;
  /** base64url SHA-256 of `canonicalCard`: the Proof of Resolution's `card_digest`. */
  cardDigest: string;
  /** Shown to the person as a caution and written to the audit log. */
  warnings: Violation[];
};
export type Rejected = { kind: "rejected"; violations: Violation[] };
export type Unavailable = {
  kind: "unavailable";
  retryable: true;
  nextStep: string;
  /** For logs: why the classifier gave no answer. */
  reason: "timeout" | "failed" | "malformed" | "circuit_open";
};
export type ScreeningResult = Accepted | Rejected | Unavailable;
export type LocalScreeningResult = Accepted | Rejected;

export type ScreenOptions = {
  /** The HTTP classifier (`classifierFromEnvironment`); without one only the local rules decide. */
  classifier?: ClassifierClient;
};

/**
 * The trust layer: screens an inquire body (parsed JSON, any shape) and answers whether the card may be shown.
 * The local rules decide first; the classifier is asked only about a card they accept, with its visible texts.
 */
export async function screenProposal(input: unknown, options: ScreenOptions = {}): Promise<ScreeningResult> {
  const local = inspect(input);
  if (local.kind === "rejected" || options.classifier === undefined) return local.result;
  const answer = await options.classifier.classify({ request_id: requestIdOf(input), texts: local.texts });
  if (answer.kind === "unavailable") {
    return {
      kind: "unavailable",
      retryable: true,
      nextStep: "Retry the same inquire with the same request_id in a few seconds; nothing was queued.",
      reason: answer.reason,
    };
  }
  const violations = reported([...local.result.warnings, ...answer.violations]);
  const rejected = violations.some((violation) => violation.severity === "error");
  return rejected ? { kind: "rejected", violations } : { ...local.result, warnings: violations };
}

/** The deterministic rules alone, synchronously: everything but the classifier. */
export function screenLocally(input: unknown): LocalScreeningResult {
  return inspect(input).result;
}

type Inspection = { kind: "rejected"; result: Rejected } | { kind: "accepted"; result: Accepted; texts: VisibleText[] };

function inspect(input: unknown): Inspection {
  const findings = new Findings();
  const proposal = readProposalFields(input, findings);
  if (proposal === undefined) return rejected(findings);
  const { fields, texts: titleTexts, payload } = proposal;
  let cardTexts: VisibleText[] = [];
  if (payload !== undefined) {
    if (serializedSizeAtLeast(payload, limits.maxCardBytes) === undefined) tooLarge(findings);
    else cardTexts = walkCard(payload, "/adaptive_card_payload", findings);
  }
  const texts = [...titleTexts, ...cardTexts];
  for (const item of texts) {
    checkCharacters(item, findings);
    checkLinks(item, findings);
  }
  findImpersonations(texts).forEach((phrase, index) => {
    const item = texts[index];
    if (phrase !== undefined && item !== undefined) findings.add("impersonation", item.path, item.text);
  });
  checkAmounts(titleTexts, cardTexts, findings);
  checkAccounts(titleTexts, cardTexts, findings);
  if (findings.hasErrors) return rejected(findings);
  const canonicalCard = canonicalJson({ ...fields, adaptive_card_payload: payload });
  const bytes = utf8(canonicalCard);
  if (payload !== undefined && payloadBytes(bytes.length, fields) > limits.maxCardBytes) {
    tooLarge(findings);
    return rejected(findings);
  }
  return {
    kind: "accepted",
    result: { kind: "accepted", canonicalCard, cardDigest: canonicalDigest(bytes), warnings: reported(findings.list) },
    texts,
  };
}

const tooLarge = (findings: Findings) =>
  findings.add("card_too_large", "/adaptive_card_payload", `more than ${limits.maxCardBytes} bytes`);

/**
 * The exact serialized bytes of the payload, read off the canonical card: `adaptive_card_payload` sorts first,
 * so the card is `{"adaptive_card_payload":<payload>,<the other fields>}`. Key order does not change the size.
 */
function payloadBytes(cardBytes: number, fields: ProposalFields): number {
  return (
    cardBytes -
    Buffer.byteLength('"adaptive_card_payload":,', "utf8") -
    Buffer.byteLength(canonicalJson(fields), "utf8")
  );
}

const rejected = (findings: Findings): Inspection => ({
  kind: "rejected",
  result: { kind: "rejected", violations: reported(findings.list) },
});

/** Bounds what `data.error` echoes, errors first; a last entry says how many more there were. */
function reported(violations: Violation[]): Violation[] {
  if (violations.length <= limits.maxReportedViolations) return violations;
  const ordered = [
    ...violations.filter((v) => v.severity === "error"),
    ...violations.filter((v) => v.severity === "warning"),
  ];
  const kept = ordered.slice(0, limits.maxReportedViolations - 1);
  const more = new Findings();
  more.add("violations_truncated", "", `${violations.length - kept.length} more`);
  return [...kept, ...more.list];
}

function requestIdOf(input: unknown): string | undefined {
  const id = (input as { request_id?: unknown }).request_id;
  return typeof id === "string" ? id : undefined;
}
