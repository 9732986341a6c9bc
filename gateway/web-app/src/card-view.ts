import { canonicalJson } from "@svc/contracts/canonical-json";
import { el, uniqueId } from "./dom.ts";
import { t, when } from "./i18n.ts";

/** A queued card as `GET /agentlink/cards` (and the inbox) answers it: the card table's fields at the top level. */
export interface Card {
  id: string;
  request_id: string;
  agent: { id: string; name: string; display_name: string } | undefined;
  summary_title: string;
  category: string;
  summary_detail: { label: string; value: string } | null;
  trusted_account_id: string | null;
  adaptive_card_payload: Record<string, unknown> | null;
  status: string;
  card_digest: string;
  warnings: { type: string; path: string; explanation: string; value?: string }[];
  ttl_at: string;
  created_at: string;
  /** A card several people are asked to decide; null for a card to this person alone. */
  quorum?: {
    approve: number;
    deny: number;
    approvers: number;
    approvals: number;
    denials: number;
    /** The others asked: the agent's name for each (null: none given) and their verdict so far. */
    others: { person_label: string | null; verdict: "approve" | "denied" | null }[];
  } | null;
}

export type Verdict = "approve" | "denied" | "later";

/**
 * What card_digest covers, in its canonical form: summary_title, category, summary_detail and
 * trusted_account_id as given, and the screened Adaptive Card; null ones left out. The page shows exactly
 * this text under "what your passkey signs", and everything it shows of the card comes from the same fields.
 */
const signedText = (card: Card): string =>
  canonicalJson({
    summary_title: card.summary_title,
    category: card.category,
    summary_detail: card.summary_detail ?? undefined,
    trusted_account_id: card.trusted_account_id ?? undefined,
    adaptive_card_payload: card.adaptive_card_payload ?? undefined,
  });

type Json = Record<string, unknown>;
const list = (value: unknown): Json[] => (Array.isArray(value) ? (value as Json[]) : []);
const text = (value: unknown): string => (typeof value === "string" ? value : "");

/** The screened Adaptive Card's elements (TextBlock, FactSet, ColumnSet, Container, Table, Image) as text. */
function adaptiveElements(elements: unknown): HTMLElement[] {
  return list(elements)
    .filter((element) => element.isVisible !== false)
    .map((element): HTMLElement => {
      switch (element.type) {
        case "TextBlock":
          return el("p", { class: element.style === "heading" ? "ac-heading" : "ac-text" }, text(element.text));
        case "FactSet":
          return el(
            "dl",
            { class: "ac-facts" },
            ...list(element.facts).flatMap((fact) => [el("dt", {}, text(fact.title)), el("dd", {}, text(fact.value))]),
          );
        case "Container":
          return el("div", { class: "ac-container" }, ...adaptiveElements(element.items));
        case "ColumnSet":
          return el(
            "div",
            { class: "ac-columns" },
            ...list(element.columns).map((column) =>
              el("div", { class: "ac-column" }, ...adaptiveElements(column.items)),
            ),
          );
        case "Table":
          return el(
            "table",
            { class: "ac-table" },
            el(
              "tbody",
              {},
              ...list(element.rows).map((row) =>
                el("tr", {}, ...list(row.cells).map((cell) => el("td", {}, ...adaptiveElements(cell.items)))),
              ),
            ),
          );
        case "Image":
          // Only the description: the page loads nothing an agent names.
          return el("p", { class: "ac-image" }, t("cardImage", { alt: text(element.altText) }));
        default:
          return el("p", {}, "");
      }
    });
}

/**
 * One card, rendered from the canonical card as text: who asks, the title, category, detail row and trusted
 * account, the trust layer's warnings as a caution, the Adaptive Card, the exact signed text, and the
 * person's choice (approve, deny, or later).
 */
export function cardView(card: Card, verdict: Verdict, choose: (verdict: Verdict) => void): HTMLElement {
  const titleId = uniqueId("card-title");
  const detail = card.summary_detail ?? undefined;
  const account = card.trusted_account_id ?? undefined;
  const choice = (value: Verdict, label: string) => {
    const id = uniqueId("verdict");
    const input = el("input", {
      type: "radio",
      id,
      name: `verdict-${card.id}`,
      value,
      checked: value === verdict,
    });
    input.addEventListener("change", () => choose(value));
    return el("div", { class: "choice" }, input, el("label", { for: id }, label));
  };
  const cautions =
    card.warnings.length > 0 &&
    el(
      "section",
      { class: "caution", "aria-label": t("cardCautionTitle") },
      el("h4", {}, t("cardCautionTitle")),
      el("p", {}, t("cardCautionIntro")),
      el("ul", {}, ...card.warnings.map((warning) => el("li", {}, warning.explanation))),
    );
  const quorum = card.quorum ? quorumView(card.quorum) : undefined;
  const payload = card.adaptive_card_payload
    ? el(
        "section",
        { class: "adaptive", "aria-label": t("cardContent") },
        ...adaptiveElements(card.adaptive_card_payload.body),
      )
    : undefined;
  return el(
    "article",
    // The id is what a push notification's click links to (`/app/inbox#card-…`).
    { class: "card", id: `card-${card.id}`, "aria-labelledby": titleId, "data-card-id": card.id },
    card.agent && el("p", { class: "from" }, t("cardFrom", { agent: card.agent.display_name || card.agent.name })),
    el("h3", { id: titleId, "data-field": "summary_title" }, card.summary_title),
    el(
      "dl",
      { class: "facts" },
      el("dt", {}, t("cardCategory")),
      el("dd", { "data-field": "category" }, card.category),
      detail && el("dt", { "data-field": "summary_detail.label" }, detail.label),
      detail && el("dd", { "data-field": "summary_detail.value" }, detail.value),
      account && el("dt", {}, t("cardTrustedAccount")),
      account && el("dd", { "data-field": "trusted_account_id" }, account),
    ),
    quorum,
    cautions,
    payload,
    el(
      "details",
      { class: "signed" },
      el("summary", {}, t("cardSigned")),
      el("pre", { "data-signed": "" }, signedText(card)),
    ),
    el("p", { class: "hint" }, t("expires", { date: when(card.ttl_at) })),
    el(
      "fieldset",
      { class: "decision" },
      el("legend", {}, t("decisionLegend", { title: card.summary_title })),
      choice("approve", t("decisionApprove")),
      choice("denied", t("decisionDeny")),
      choice("later", t("decisionLater")),
    ),
  );
}

/**
 * A quorum card: who else is asked (by the agent's name for them) and what each decided so far, how many
 * approvals it still needs, and how many denials end it, so the person knows their approval may not be the
 * last word and their denial may be.
 */
function quorumView(quorum: NonNullable<Card["quorum"]>): HTMLElement {
  const remaining = Math.max(quorum.approve - quorum.approvals, 0);
  return el(
    "section",
    { class: "quorum", "aria-label": t("quorumTitle") },
    el("p", { "data-quorum": "asked" }, t("quorumAsked", { others: String(quorum.approvers - 1) })),
    el(
      "ul",
      { "data-quorum": "others" },
      ...quorum.others.map((other) =>
        el(
          "li",
          {},
          other.person_label ?? t("quorumAnotherPerson"),
          ": ",
          other.verdict === "approve"
            ? t("quorumApproved")
            : other.verdict === "denied"
              ? t("quorumDenied")
              : t("quorumPending"),
        ),
      ),
    ),
    el("p", { "data-quorum": "remaining" }, t("quorumRemaining", { remaining: String(remaining) })),
    el(
      "p",
      { "data-quorum": "veto" },
      quorum.deny === 1 ? t("quorumOneDenial") : t("quorumDenials", { deny: String(quorum.deny) }),
    ),
  );
}
