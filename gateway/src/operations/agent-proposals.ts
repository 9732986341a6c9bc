import type { JsonObject } from "@bufbuild/protobuf";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { Logger } from "@svc/platform";
import { CardStatus } from "@svc/proto/agentlink/v1/agentlink_pb.js";
import { envelopeErrorOf, InputValidationError } from "../http/errors.ts";
import { instant } from "../http/instant.ts";
import { ok } from "../http/route.ts";
import { tooLongIssue } from "../http/schema.ts";
import { cardKey } from "../long-poll/waiters.ts";
import type { GatewayServices } from "../services.ts";
import { defineRoute } from "../services.ts";

const agentKeyOnly = { accepts: ["agent_key"] } as const;

export const cardStatusSchema = {
  type: "string",
  enum: ["queued", "approved", "denied", "cancelled", "expired"],
} as const;

export const statusNames: Record<CardStatus, (typeof cardStatusSchema.enum)[number] | undefined> = {
  [CardStatus.UNSPECIFIED]: undefined,
  [CardStatus.QUEUED]: "queued",
  [CardStatus.APPROVED]: "approved",
  [CardStatus.DENIED]: "denied",
  [CardStatus.CANCELLED]: "cancelled",
  [CardStatus.EXPIRED]: "expired",
};

/**
 * `POST /agentlink/inquire`: the agent proposes a card to one person. The spec's field rules are here; the
 * rules of the card (exactly one identifier, the ttl's range, the categories, the person, the trust layer,
 * idempotency) are agentlink's, whose refusals carry their `data.error` fields. `ttl_seconds` is bounded
 * here only to the wire's int32: within that, its range is answered as `ttl_below_floor` / `ttl_above_ceiling`.
 */
export const inquireRoute = defineRoute({
  operationId: "agentlinkInquire",
  method: "POST",
  path: "/agentlink/inquire",
  summary:
    "Propose a card to one person (opaque_id, svc_user_id or user_email), or to 2-10 people at once (approvers with quorum): exactly one of the four. Queued until decided, cancelled or ttl_at passes. A quorum card is one card every approver sees; each decides once; it is approved at quorum.approve approvals or denied at quorum.deny denials (default 1: one veto), whichever comes first. Idempotent on (agent, request_id): a repeat, even with a different body, answers the first card with idempotent_replay: true. data.error 400 (identifiers; invalid_approvers, duplicate_approver, invalid_quorum; ttl_below_floor, ttl_above_ceiling), 403 category_not_allowed, 404 no active binding (approver_not_bound for an approver), or no person with that svc_user_id or verified user_email, 422 trust_layer_rejected, 502 trust_layer_unavailable or user lookup failed, 500 retry with the same request_id.",
  auth: agentKeyOnly,
  input: {
    type: "object",
    properties: {
      request_id: { type: "string", format: "uuid-v4", description: "The agent's id of this proposal." },
      action: {
        type: "object",
        properties: {
          summary_title: { type: "string", minLength: 1, maxLength: 120, maxLengthOwner: "agentlink" },
          category: {
            type: "string",
            minLength: 1,
            maxLength: 80,
            maxLengthOwner: "agentlink",
            description: "One of the agent's categories.",
          },
          summary_detail: {
            type: "object",
            properties: {
              label: { type: "string", minLength: 1, maxLength: 40, maxLengthOwner: "agentlink" },
              value: { type: "string", minLength: 1, maxLength: 80, maxLengthOwner: "agentlink" },
            },
            required: ["label", "value"],
          },
          trusted_account_id: { type: "string", format: "uuid" },
        },
        required: ["summary_title", "category"],
      },
      opaque_id: { type: "string", minLength: 4, maxLength: 64, description: "Preferred: from check-binding." },
      svc_user_id: {
        type: "string",
        format: "uuid",
        description: "The global user id; identical across agents, so it can correlate a person between integrations.",
      },
      user_email: {
        type: "string",
        format: "email",
        deprecated: true,
        description:
          "The address a person's identity provider vouched for (email_verified) at their last sign-in, in any letter case; then as svc_user_id. An unknown or unverified address is data.error 404.",
      },
      approvers: {
        type: "array",
        minItems: 2,
        maxItems: 10,
        items: { type: "string", minLength: 4, maxLength: 64 },
        description:
          "A quorum card: 2-10 distinct opaque_ids, each an active binding of this agent, instead of opaque_id, svc_user_id and user_email; with quorum.",
      },
      quorum: {
        type: "object",
        properties: {
          approve: {
            type: "integer",
            minimum: 1,
            maximum: 10,
            description: "Approvals that approve the card: 1 to the number of approvers.",
          },
          deny: {
            type: "integer",
            minimum: 1,
            maximum: 10,
            description:
              "Denials that deny the card; default 1 (one veto). approve + deny is at most the number of approvers plus one.",
          },
        },
        required: ["approve"],
        description: "With approvers only.",
      },
      adaptive_card_payload: {
        type: "object",
        additionalProperties: true,
        description: "An Adaptive Card 1.5, checked by the content-safety layer.",
      },
      ttl_seconds: {
        type: "integer",
        minimum: -2147483648,
        maximum: 2147483647,
        description: "Default 600; 60-86400, else data.error 400 ttl_below_floor or ttl_above_ceiling.",
      },
    },
    required: ["request_id", "action"],
  },
  envelope: "nested",
  output: {
    type: "object",
    properties: {
      status: cardStatusSchema,
      card_id: { type: "string", format: "uuid" },
      ttl_at: { type: "string", format: "date-time" },
      idempotent_replay: { type: "boolean", description: "Present on a repeat of a request_id: the first card." },
    },
  },
  async handle(input, { caller, services, rawInput }) {
    const answer = await services.agentlink
      .inquire({
        caller,
        requestId: input.request_id,
        opaqueId: input.opaque_id,
        svcUserId: input.svc_user_id,
        userEmail: input.user_email,
        approvers: input.approvers,
        quorum: input.quorum,
        ttlSeconds: input.ttl_seconds,
        proposal: {
          action: input.action as JsonObject,
          ...(input.adaptive_card_payload !== undefined && {
            adaptive_card_payload: input.adaptive_card_payload as JsonObject,
          }),
        },
      })
      .catch((error: unknown) => {
        throw overlongAsInvalidInput(error, rawInput) ?? error;
      });
    return ok({
      status: statusNames[answer.status],
      card_id: answer.cardId,
      ttl_at: instant(answer.ttlAt),
      ...(answer.idempotentReplay && { idempotent_replay: true }),
    });
  },
});

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/**
 * agentlink's `proposal_field_too_long` (the trust layer owns the proposal's field limits) as the 400 that
 * input validation gives for any other text over its `maxLength`: the same issues in the same words, with
 * the input as received. Undefined for any other failure.
 */
function overlongAsInvalidInput(error: unknown, rawInput: Record<string, unknown>): InputValidationError | undefined {
  const refusal = envelopeErrorOf(error);
  if (refusal?.code !== "proposal_field_too_long" || !Array.isArray(refusal.fields)) return undefined;
  const issues = refusal.fields.flatMap((field) => {
    if (!isRecord(field) || typeof field.path !== "string" || typeof field.max_length !== "number") return [];
    const names = field.path.split("/").slice(1);
    const value = names.reduce<unknown>((at, name) => (isRecord(at) ? at[name] : undefined), rawInput);
    return typeof value === "string" ? [tooLongIssue(names.join("."), value, field.max_length)] : [];
  });
  return issues.length > 0 ? new InputValidationError(rawInput, issues) : undefined;
}

/**
 * `GET /agentlink/check-status`: the calling agent's card by `request_id`. With `wait_seconds` and the card
 * queued, a long-poll: held in this gateway (`Waiters`) until agentlink notifies that the card left
 * queued (answered with the notification's answer), or until `wait_seconds` is up or `ttl_at` comes (a
 * queued card reads expired from then on), when the card is read again. Nothing polls agentlink meanwhile.
 */
export const checkStatusRoute = defineRoute({
  operationId: "agentlinkCheckStatus",
  method: "GET",
  path: "/agentlink/check-status",
  summary:
    "The calling agent's card by request_id: status (a queued card past ttl_at reads expired), ttl_at, resolved_at, ceremony_id, resolution_jwt, verdict, delivered, callback_attempts; for a quorum card also quorum and decisions (each approver's opaque_id, verdict and decided_at, null while pending). With wait_seconds (0-25, default 0: at once) a long-poll: a queued card is answered as soon as it leaves queued (approved, denied, cancelled, expired; an approver's decision that does not resolve a quorum card does not end it), else when wait_seconds is up, with its status then (normally queued); a held wait counts as one in_flight request. No card with that request_id for this agent: data.error 404.",
  auth: agentKeyOnly,
  input: {
    type: "object",
    properties: {
      request_id: { type: "string", format: "uuid", description: "The request_id of the inquire." },
      wait_seconds: {
        type: "integer",
        minimum: 0,
        maximum: 25,
        description: "Default 0 (answer at once). Else the longest the answer waits for a queued card to leave queued.",
      },
    },
    required: ["request_id"],
  },
  envelope: "nested",
  output: {
    type: "object",
    properties: {
      status: cardStatusSchema,
      ttl_at: { type: "string", format: "date-time" },
      resolved_at: { type: "string", format: "date-time", nullable: true },
      ceremony_id: { type: "string", format: "uuid", nullable: true },
      resolution_jwt: { type: "string", nullable: true, description: "The proof; approved or denied only." },
      verdict: { type: "string", enum: ["approve", "denied"], nullable: true },
      delivered: {
        type: "boolean",
        description:
          "Whether the callback reached the agent (a 2xx). False when the agent has no callback URL, and while the service that sends callbacks cannot be asked.",
      },
      callback_attempts: {
        type: "integer",
        description:
          "Attempts so far to POST the resolution to the agent's callback URL: 0 without a callback, and while the service that sends callbacks cannot be asked.",
      },
      quorum: {
        type: "object",
        properties: { approve: { type: "integer" }, deny: { type: "integer" } },
        description: "A quorum card's thresholds; absent for a card to one person.",
      },
      decisions: {
        type: "array",
        items: {
          type: "object",
          properties: {
            opaque_id: { type: "string" },
            verdict: { type: "string", enum: ["approve", "denied"], nullable: true },
            decided_at: { type: "string", format: "date-time", nullable: true },
          },
        },
        description:
          "A quorum card's approvers in the order of approvers, each with their decision or null while pending; absent for a card to one person.",
      },
    },
  },
  async handle(input, { caller, services, clock, logger, signal }) {
    const read = () => services.cardStatuses.read({ caller, requestId: input.request_id });
    const waitMs = (input.wait_seconds ?? 0) * 1000;
    const state =
      waitMs === 0 || !caller
        ? await read()
        : await services.cardWaiters.hold(
            cardKey(caller.credentialId, input.request_id),
            read,
            (first) =>
              first.status === CardStatus.QUEUED && first.ttlAt
                ? Math.min(waitMs, timestampDate(first.ttlAt).getTime() - clock.now().getTime())
                : 0,
            signal,
          );
    const callback = await callbackOf(services, logger, caller?.credentialId ?? "", state);
    return ok({
      status: statusNames[state.status],
      ttl_at: instant(state.ttlAt),
      resolved_at: instant(state.resolvedAt),
      ceremony_id: state.ceremonyId ?? null,
      resolution_jwt: state.resolutionJwt ?? null,
      verdict: state.verdict ?? null,
      delivered: callback.delivered,
      callback_attempts: callback.attempts,
      ...(state.quorum && {
        quorum: { approve: state.quorum.approve, deny: state.quorum.deny ?? 1 },
        decisions: state.decisions.map((decision) => ({
          opaque_id: decision.opaqueId,
          verdict: decision.verdict ?? null,
          decided_at: instant(decision.decidedAt),
        })),
      }),
    });
  },
});

const noCallback = { delivered: false, attempts: 0 };

/**
 * The agent's callback of a resolved card, as webhook-dispatch (which sends it) reports it. A queued or
 * cancelled card has none. When webhook-dispatch cannot answer, check-status still answers, reading the
 * callback as not delivered with no attempts; asking again later gives the true state.
 */
async function callbackOf(
  services: GatewayServices,
  logger: Logger,
  agentId: string,
  state: { status: CardStatus; cardId: string },
): Promise<{ delivered: boolean; attempts: number }> {
  if (state.status === CardStatus.QUEUED || state.status === CardStatus.CANCELLED) return noCallback;
  try {
    const { delivered, attempts } = await services.webhookCallbacks.getCallbackDelivery({
      agentId,
      cardId: state.cardId,
    });
    return { delivered, attempts };
  } catch (error) {
    logger.warn("webhook-dispatch did not report the callback; check-status answers it as not delivered", {
      error,
      cardId: state.cardId,
    });
    return noCallback;
  }
}

/**
 * `POST /agentlink/cancel`: cancels the calling agent's queued card (audit log, no webhook). A card no longer
 * queued is not an error: its current status with `already_resolved: true`, and nothing changes.
 */
export const cancelRoute = defineRoute({
  operationId: "agentlinkCancel",
  method: "POST",
  path: "/agentlink/cancel",
  summary:
    "Cancel the calling agent's queued card: status cancelled, card_id, cancelled_at; no webhook. A card no longer queued: its current status with already_resolved: true, unchanged. No card with that request_id for this agent: data.error 404.",
  auth: agentKeyOnly,
  input: {
    type: "object",
    properties: {
      request_id: { type: "string", format: "uuid", description: "The request_id of the inquire." },
      reason: { type: "string", maxLength: 200, description: "Written to the audit log." },
    },
    required: ["request_id"],
  },
  envelope: "nested",
  output: {
    type: "object",
    properties: {
      status: cardStatusSchema,
      card_id: { type: "string", format: "uuid" },
      cancelled_at: { type: "string", format: "date-time", description: "When the card is cancelled." },
      already_resolved: { type: "boolean", description: "Present when the card was no longer queued." },
    },
  },
  async handle(input, { caller, services }) {
    const outcome = await services.agentlink.cancel({ caller, requestId: input.request_id, reason: input.reason });
    return ok({
      status: statusNames[outcome.status],
      card_id: outcome.cardId,
      ...(outcome.cancelledAt && { cancelled_at: instant(outcome.cancelledAt) }),
      ...(outcome.alreadyResolved && { already_resolved: true }),
    });
  },
});
