import { createHash } from "node:crypto";
import { canonicalJson } from "@svc/contracts/canonical-json";
import { isUuid } from "@svc/platform";
import type { Verdict } from "../proposals/card.entity.ts";
import { refuse } from "../refusal.ts";

/** The spec's decisions per confirm. */
const decisionsPerCall = { min: 1, max: 20 } as const;

export interface Decision {
  cardId: string;
  verdict: Verdict;
}

/** 1-20 decisions, each a card uuid with `approve` or `denied`, no card twice. */
export function checkedDecisions(decisions: readonly { cardId: string; verdict: string }[]): Decision[] {
  if (decisions.length < decisionsPerCall.min || decisions.length > decisionsPerCall.max)
    throw refuse("invalid_argument", `decisions must hold ${decisionsPerCall.min}-${decisionsPerCall.max} items`);
  const seen = new Set<string>();
  return decisions.map(({ cardId, verdict }, index) => {
    if (!isUuid(cardId)) throw refuse("invalid_argument", `decisions[${index}].card_id must be a uuid`);
    if (verdict !== "approve" && verdict !== "denied")
      throw refuse("invalid_argument", `decisions[${index}].verdict must be approve or denied`);
    const id = cardId.toLowerCase();
    if (seen.has(id)) throw refuse("invalid_argument", `card ${id} is decided twice`);
    seen.add(id);
    return { cardId: id, verdict };
  });
}

/**
 * What the passkey signs (decisions.md, "Confirm and the passkey"): the RFC 8785 JSON of the decisions
 * sorted by card_id, each with its verdict and the `card_digest` of what the person saw.
 */
export function decisionsDocument(decisions: readonly Decision[], digestOf: (cardId: string) => string): string {
  const sorted = [...decisions].sort((a, b) => (a.cardId < b.cardId ? -1 : a.cardId > b.cardId ? 1 : 0));
  return canonicalJson(
    sorted.map(({ cardId, verdict }) => ({ card_id: cardId, verdict, card_digest: digestOf(cardId) })),
  );
}

/** The WebAuthn challenge: base64url(SHA-256(nonce ‖ decisions document)). */
export const confirmChallenge = (nonce: Buffer, document: string): string =>
  createHash("sha256").update(nonce).update(document, "utf8").digest("base64url");

/**
 * The passkey ceremony's binding: the account service finishes the assertion only for the same decisions
 * it was begun for, so a confirm whose decisions differ from the challenge's creates nothing.
 */
export const assertionBinding = (document: string): string =>
  `agents-ask-confirm:${createHash("sha256").update(document, "utf8").digest("base64url")}`;
