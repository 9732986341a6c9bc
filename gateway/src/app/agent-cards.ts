import type { JsonObject } from "@bufbuild/protobuf";
import type { PersonCard } from "@svc/proto/agentlink/v1/agentlink_pb.js";
import { InputValidationError } from "../http/errors.ts";
import { instant } from "../http/instant.ts";
import { ok } from "../http/route.ts";
import type { Schema } from "../http/schema.ts";
import { cardStatusSchema, statusNames } from "../operations/agent-proposals.ts";
import { defineRoute } from "../services.ts";
import { agentSummary, agentSummarySchema } from "./agent-summary.ts";
import { pageOriginField } from "./person-fields.ts";
import { pageRelyingParty, relyingParty } from "./relying-party.ts";
import { sessionUserId } from "./session-user.ts";

/**
 * The person's side of Agents Ask (app API, signed-in session): their queued cards, the passkey challenge
 * that commits to their decisions, and the confirm that applies them and returns the proofs.
 */

const signedIn = { accepts: ["user_session"] } as const;

const decisionsField = {
  type: "array",
  minItems: 1,
  maxItems: 20,
  items: {
    type: "object",
    properties: {
      card_id: { type: "string", format: "uuid" },
      verdict: { type: "string", enum: ["approve", "denied"] },
    },
    required: ["card_id", "verdict"],
  },
} as const;

const decisionsOf = (decisions: readonly { card_id: string; verdict: string }[]) =>
  decisions.map((d) => ({ cardId: d.card_id, verdict: d.verdict }));

/**
 * One queued card as the person's side shows it (`GET /agentlink/cards`, the inbox's cards): every field of
 * the spec's card table at the top level (optional ones null when the agent gave none), `id` the card id.
 */
export const cardSchema: Schema = {
  type: "object",
  properties: {
    id: { type: "string", format: "uuid", description: "The card id (as card_id)." },
    card_id: { type: "string", format: "uuid" },
    request_id: { type: "string", format: "uuid" },
    agent: agentSummarySchema,
    summary_title: { type: "string" },
    summary_detail: {
      type: "object",
      properties: { label: { type: "string" }, value: { type: "string" } },
      nullable: true,
    },
    category: { type: "string" },
    trusted_account_id: { type: "string", format: "uuid", nullable: true },
    adaptive_card_payload: { type: "object", additionalProperties: true, nullable: true },
    status: cardStatusSchema,
    ttl_at: { type: "string", format: "date-time" },
    created_at: { type: "string", format: "date-time" },
    card_digest: {
      type: "string",
      description:
        "base64url SHA-256 of the RFC 8785 JSON of {summary_title, category, summary_detail, trusted_account_id, adaptive_card_payload}, null ones left out: what the proof commits to.",
    },
    warnings: { type: "array", items: { type: "object", additionalProperties: true } },
    quorum: {
      type: "object",
      nullable: true,
      properties: {
        approve: { type: "integer", description: "Approvals that approve the card." },
        deny: { type: "integer", description: "Denials that deny it (1: one denial ends it)." },
        approvers: { type: "integer", description: "Everyone asked, the person included." },
        approvals: { type: "integer", description: "Approvals counted so far." },
        denials: { type: "integer", description: "Denials counted so far." },
        others: {
          type: "array",
          description:
            "The others asked, in the agent's order, the person left out: each by the agent's name for them (their binding's person_label; null when the agent gave none, shown as another person) and their verdict so far. Context, not part of card_digest.",
          items: {
            type: "object",
            properties: {
              person_label: { type: "string", nullable: true },
              verdict: { type: "string", enum: ["approve", "denied"], nullable: true },
            },
          },
        },
      },
      description: "A card several people are asked to decide (null for a card to one person).",
    },
  },
};

/** The canonical card's fields, as the trust layer passed them: what `card_digest` hashes. */
interface CanonicalCard {
  summary_title?: string;
  category?: string;
  summary_detail?: { label: string; value: string };
  trusted_account_id?: string;
  adaptive_card_payload?: JsonObject;
}

/** A card as `cardSchema` says, its card-table fields from the canonical card. */
export function personCardItem(card: PersonCard) {
  const canonical = (card.card ?? {}) as CanonicalCard;
  return {
    id: card.cardId,
    card_id: card.cardId,
    request_id: card.requestId,
    agent: agentSummary(card.agent),
    summary_title: canonical.summary_title ?? "",
    summary_detail: canonical.summary_detail ?? null,
    category: canonical.category ?? "",
    trusted_account_id: canonical.trusted_account_id ?? null,
    adaptive_card_payload: canonical.adaptive_card_payload ?? null,
    status: statusNames[card.status],
    ttl_at: instant(card.ttlAt),
    created_at: instant(card.proposedAt),
    card_digest: card.cardDigest,
    warnings: card.warnings,
    quorum: card.quorum
      ? {
          approve: card.quorum.approve,
          deny: card.quorum.deny,
          approvers: card.quorum.approvers,
          approvals: card.quorum.approvals,
          denials: card.quorum.denials,
          others: card.quorum.others.map((other) => ({
            person_label: other.personLabel ?? null,
            verdict: other.verdict === "" ? null : other.verdict,
          })),
        }
      : null,
  };
}

const listCardsRoute = defineRoute({
  operationId: "agentlinkListCards",
  method: "GET",
  path: "/agentlink/cards",
  summary:
    "The signed-in person's queued cards, oldest first: each with every field of the card table at the top level (id is the card id; summary_title, summary_detail, category, trusted_account_id and the screened adaptive_card_payload from its canonical form, optional ones null), status, ttl_at, created_at, then card_digest and the trust layer's warnings (show them as a caution). Never another person's cards.",
  auth: signedIn,
  input: { type: "object", properties: {} },
  envelope: "nested",
  output: { type: "object", properties: { cards: { type: "array", items: cardSchema } } },
  async handle(_input, { caller, services }) {
    const { cards } = await services.agentlink.listCards({ svcUserId: sessionUserId(caller) });
    return ok({ cards: cards.map(personCardItem) });
  },
});

const confirmChallengeRoute = defineRoute({
  operationId: "agentlinkConfirmChallenge",
  method: "POST",
  path: "/agentlink/confirm-challenge",
  summary:
    "Start the passkey assertion for these decisions (the same ones confirm will send). Its WebAuthn challenge is base64url(SHA-256(nonce ‖ decisions_json)), where decisions_json is the RFC 8785 JSON of the decisions sorted by card_id, each with card_id, verdict and card_digest; valid 5 minutes, single use. Errors as confirm's: 404 not your card, 409 no longer queued, 410 expired.",
  auth: signedIn,
  input: {
    type: "object",
    properties: {
      decisions: decisionsField,
      origin: {
        ...pageOriginField,
        description: "The page's origin: the service's own (on the relying party's host); another origin is refused.",
      },
    },
    required: ["decisions"],
  },
  envelope: "nested",
  output: {
    type: "object",
    properties: {
      challenge_id: { type: "string", description: "Name it in confirm's passkey_assertion." },
      options: { type: "object", additionalProperties: true, description: "PublicKeyCredentialRequestOptionsJSON." },
      nonce: { type: "string", description: "base64url of the single-use nonce the challenge hashes first." },
      decisions_json: { type: "string", description: "The exact text the challenge hashes after the nonce." },
      expires_at: { type: "string", format: "date-time" },
    },
  },
  async handle(input, { caller, services }) {
    const party =
      input.origin === undefined
        ? relyingParty(services.publicOrigin, undefined)
        : pageRelyingParty(services.publicOrigin, input.origin);
    // A challenge for another origin could never be answered: refused before anything is begun.
    if (!party)
      throw new InputValidationError(input, [
        {
          propertyPath: "origin",
          invalidValue: input.origin,
          message: `origin must be this service's own origin (on ${new URL(services.publicOrigin).hostname}), not ${input.origin}`,
        },
      ]);
    const begun = await services.agentlink.beginConfirmation({
      svcUserId: sessionUserId(caller),
      decisions: decisionsOf(input.decisions),
      ...party,
    });
    return ok({
      challenge_id: begun.challengeId,
      options: JSON.parse(begun.optionsJson),
      nonce: begun.nonce,
      decisions_json: begun.decisionsJson,
      expires_at: instant(begun.expiresAt),
    });
  },
});

const confirmRoute = defineRoute({
  operationId: "agentlinkConfirm",
  method: "POST",
  path: "/agentlink/confirm",
  summary:
    "Apply 1-20 decisions with the passkey assertion over them (from confirm-challenge; a sandbox human in development may omit it): all or nothing, one Proof of Resolution each, all with one iat and ceremony_id. On a quorum card the decision is counted; it has a proof only when it resolves the card (else awaiting_others). A repeat with the same ceremony_id answers the same resolutions. data.error 404 a card not yours, 409 a card no longer queued (or the ceremony_id used for other decisions, or already_decided: you decided this quorum card), 410 a card expired, 403 an assertion that does not confirm these decisions, 502 a service behind did not answer.",
  auth: signedIn,
  input: {
    type: "object",
    properties: {
      decisions: decisionsField,
      ceremony_id: {
        type: "string",
        format: "uuid-v4",
        description: "Shared by all resolutions of this call; generated when omitted. Send one to retry safely.",
      },
      passkey_assertion: {
        type: "object",
        properties: {
          challenge_id: { type: "string", minLength: 1, maxLength: 100 },
          response: {
            type: "object",
            additionalProperties: true,
            description: "The authenticator's AuthenticationResponseJSON.",
          },
        },
        required: ["challenge_id", "response"],
      },
    },
    required: ["decisions"],
  },
  envelope: "nested",
  output: {
    type: "object",
    properties: {
      ceremony_id: { type: "string", format: "uuid" },
      signed_at: { type: "string", format: "date-time" },
      resolutions: {
        type: "array",
        items: {
          type: "object",
          properties: {
            request_id: { type: "string", format: "uuid" },
            card_id: { type: "string", format: "uuid" },
            token: {
              type: "string",
              description:
                "The Proof of Resolution (ES256 JWT); absent when the decision was counted on a quorum card that waits on others.",
            },
            awaiting_others: {
              type: "boolean",
              description:
                "Present (true) when the decision was counted on a quorum card that still waits on other approvers.",
            },
          },
        },
      },
    },
  },
  async handle(input, { caller, services }) {
    const confirmed = await services.agentlink.confirm({
      svcUserId: sessionUserId(caller),
      decisions: decisionsOf(input.decisions),
      ceremonyId: input.ceremony_id,
      ...(input.passkey_assertion && {
        passkeyAssertion: {
          challengeId: input.passkey_assertion.challenge_id,
          responseJson: JSON.stringify(input.passkey_assertion.response),
        },
      }),
    });
    return ok({
      ceremony_id: confirmed.ceremonyId,
      signed_at: instant(confirmed.signedAt),
      resolutions: confirmed.resolutions.map((r) => ({
        request_id: r.requestId,
        card_id: r.cardId,
        ...(r.token ? { token: r.token } : { awaiting_others: true }),
      })),
    });
  },
});

export const agentCardRoutes = [listCardsRoute, confirmChallengeRoute, confirmRoute];
