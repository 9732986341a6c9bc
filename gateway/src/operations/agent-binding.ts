import { Code, ConnectError } from "@connectrpc/connect";
import { BindingStatus } from "@svc/proto/agentlink/v1/agentlink_pb.js";
import { envelopeErrorOf, OperationError } from "../http/errors.ts";
import { instant } from "../http/instant.ts";
import { ok } from "../http/route.ts";
import { defineRoute } from "../services.ts";
import { bindLinks } from "./bind-links.ts";

const agentKeyOnly = { accepts: ["agent_key"] } as const;

const statusNames: Record<BindingStatus, "pending" | "claimed" | "expired" | undefined> = {
  [BindingStatus.UNSPECIFIED]: undefined,
  [BindingStatus.PENDING]: "pending",
  [BindingStatus.CLAIMED]: "claimed",
  [BindingStatus.EXPIRED]: "expired",
};

/**
 * `POST /agent/bind-session` (decisions.md "bind-session / check-binding"): a link code for a person
 * to claim in the app, 8 characters, 10 minutes, single use. The spec's one refusal: 500 when the code
 * could not be created. Ours besides: the optional `person_label`, the agent's name for the person: blank
 * after trimming or over 64 characters is 400, and what the trust layer's rules refuse is its 422; either
 * way no code is created.
 */
export const bindSessionRoute = defineRoute({
  operationId: "agentBindSession",
  method: "POST",
  path: "/agent/bind-session",
  summary:
    "Start binding a person to the calling agent: a link code (8 characters, no 0/O or 1/I/L) the person claims in the app within 10 minutes, once. Optionally person_label, the agent's name for the person: the person sees it when they claim the code, and the other approvers of this agent's quorum cards see them by it. data.error 400 invalid_person_label when person_label is blank after trimming or over 64 characters, 422 trust_layer_rejected with its violations when the trust layer refuses it (nothing is created either way), 500 when no code could be created.",
  auth: agentKeyOnly,
  input: {
    type: "object",
    properties: {
      person_label: {
        type: "string",
        minLength: 1,
        maxLength: 64,
        description:
          "The agent's name for the person (plain text, one line, 1-64 characters), screened like card text: no control, bidi or invisible characters, no links, no impersonation. Shown to the person at claim and in their list of agents, and to the other approvers of this agent's quorum cards; never part of a card_digest.",
      },
    },
  },
  envelope: "nested",
  output: {
    type: "object",
    properties: {
      link_code: { type: "string", pattern: "^[2-9A-HJKMNP-Z]{8}$" },
      link_url: { type: "string", description: "The app's link that claims the code (`svc://bind/<link_code>`)." },
      qr_code_url: { type: "string", description: "`link_url` as an SVG QR code, for an `<img>`." },
      expires_at: { type: "string", format: "date-time" },
    },
  },
  async handle(input, { caller, services }) {
    const started = await services.agentlink
      .startBindSession({ caller, personLabel: input.person_label })
      .catch((error: unknown) => {
        if (error instanceof ConnectError && error.code === Code.InvalidArgument)
          throw envelopeErrorOf(error)?.statusCode === 422
            ? error
            : new OperationError(400, error.rawMessage, { code: "invalid_person_label" });
        if (error instanceof ConnectError) throw new OperationError(500, "the link code could not be created; retry");
        throw error;
      });
    return ok({
      link_code: started.linkCode,
      ...bindLinks(services.publicOrigin, started.linkCode),
      expires_at: instant(started.expiresAt),
    });
  },
});

/**
 * `GET /agent/check-binding`: whether the person claimed the code, and then their pairwise `opaque_id`.
 * Only the agent that started the code sees it: an unknown code or another agent's is `data.error` 404.
 */
export const checkBindingRoute = defineRoute({
  operationId: "agentCheckBinding",
  method: "GET",
  path: "/agent/check-binding",
  summary:
    "Whether the person claimed the calling agent's link code; once claimed, their opaque_id for this agent. An unknown code or another agent's: data.error 404.",
  auth: agentKeyOnly,
  input: {
    type: "object",
    properties: { link_code: { type: "string", minLength: 1, maxLength: 64, description: "From bind-session." } },
    required: ["link_code"],
  },
  envelope: "nested",
  output: {
    type: "object",
    properties: {
      status: { type: "string", enum: ["pending", "claimed", "expired"] },
      opaque_id: {
        type: "string",
        nullable: true,
        description:
          "The person's id for this agent only (4-64 characters), the same on every binding of this person to this agent; null until claimed.",
      },
      bound_at: { type: "string", format: "date-time", nullable: true },
      person_label: {
        type: "string",
        nullable: true,
        description: "The person_label the agent gave at bind-session; null when it gave none.",
      },
    },
  },
  async handle(input, { caller, services }) {
    const state = await services.agentlink.checkBinding({ caller, linkCode: input.link_code });
    return ok({
      status: statusNames[state.status],
      opaque_id: state.opaqueId ?? null,
      bound_at: instant(state.boundAt),
      person_label: state.personLabel ?? null,
    });
  },
});
