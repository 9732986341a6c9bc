import type { PersonCard } from "@svc/proto/agentlink/v1/agentlink_pb.js";
import { InputValidationError } from "../http/errors.ts";
import { instant } from "../http/instant.ts";
import { ok } from "../http/route.ts";
import type { Schema } from "../http/schema.ts";
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

/** One queued card as the person's side shows it (`GET /agentlink/cards`, the inbox's cards). */
export const cardSchema: Schema = {
  type: "object",
  properties: {
    id: { type: "string", format: "uuid" },
    request_id: { type: "string", format: "uuid" },
    agent: agentSummarySchema,
    action: {
      type: "object",
      description: "summary_title, category, and summary_detail and trusted_account_id when the agent gave them.",
      additionalProperties: true,
    },
    adaptive_card_payload: { type: "object", additionalProperties: true, nullable: true },
    card_digest: {
      type: "string",
      description:
        "base64url SHA-256 of the RFC 8785 JSON of {summary_title, category, summary_detail?, trusted_account_id?, adaptive_card_payload?}: what the proof commits to.",
    },
    warnings: { type: "array", items: { type: "object", additionalProperties: true } },
    ttl_at: { type: "string", format: "date-time" },
    proposed_at: { type: "string", format: "date-time" },
  },
};

/** A card as `cardSchema` says: the action from the canonical card, its Adaptive Card apart. */
export function personCardItem(card: PersonCard) {
  const { adaptive_card_payload, ...action } = card.card ?? {};
  return {
    id: card.cardId,
    request_id: card.requestId,
    agent: agentSummary(card.agent),
    action,
    adaptive_card_payload: adaptive_card_payload ?? null,
    card_digest: card.cardDigest,
    warnings: card.warnings,
    ttl_at: instant(card.ttlAt),
    proposed_at: instant(card.proposedAt),
  };
}

const listCardsRoute = defineRoute({
  operationId: "agentlinkListCards",
  method: "GET",
  path: "/agentlink/cards",
  summary:
    "The signed-in person's queued cards, oldest first, rendered from their canonical form: the agent, the action, the screened Adaptive Card, the trust layer's warnings (show them as a caution) and card_digest. Never another person's cards.",
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
    "Apply 1-20 decisions with the passkey assertion over them (from confirm-challenge; a sandbox human in development may omit it): all or nothing, one Proof of Resolution each, all with one iat and ceremony_id. A repeat with the same ceremony_id answers the same resolutions. data.error 404 a card not yours, 409 a card no longer queued (or the ceremony_id used for other decisions), 410 a card expired, 403 an assertion that does not confirm these decisions, 502 a service behind did not answer.",
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
            token: { type: "string", description: "The Proof of Resolution (ES256 JWT)." },
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
      resolutions: confirmed.resolutions.map((r) => ({ request_id: r.requestId, card_id: r.cardId, token: r.token })),
    });
  },
});

export const agentCardRoutes = [listCardsRoute, confirmChallengeRoute, confirmRoute];
