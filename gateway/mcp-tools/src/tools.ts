import { randomUUID } from "node:crypto";
import { decodeJwt } from "jose";
import type { AgentOperations, Answer } from "./operations.ts";

/** A JSON Schema object, as MCP carries `inputSchema` and `outputSchema`. */
type JsonSchema = { type: "object" } & Record<string, unknown>;

/** What a tool may do while it runs beyond calling operations: report progress. */
interface ToolContext {
  signal: AbortSignal;
  /** Sends `notifications/progress` when the client asked for it (a progress token); otherwise nothing. */
  progress(progress: number, total: number, message: string): Promise<void>;
}

export interface AgentTool {
  name: string;
  title: string;
  description: string;
  inputSchema: JsonSchema;
  outputSchema: JsonSchema;
  run(input: Record<string, unknown>, operations: AgentOperations, context: ToolContext): Promise<Answer>;
  /** A link the client is asked to open for the person after a successful run, where it supports URL-mode elicitation. */
  linkToOpen?(result: Record<string, unknown>): { url: string; message: string };
}

const refusalSchema = {
  type: "object",
  description: "Present only on a refusal (isError): the public API's data.error.",
  properties: {
    statusCode: { type: "integer" },
    message: { type: "string" },
    code: { type: "string" },
    violations: { type: "array", description: "A trust-layer rejection: what to change in the card." },
  },
  required: ["statusCode", "message"],
} as const;

/**
 * Every result's schema: the tool's fields, or `error` on a refusal. MCP clients of the 2025 revision check a
 * refusal against `outputSchema` too, so the fields are required only in the success branch.
 */
function resultSchema(properties: Record<string, unknown>, required: readonly string[]): JsonSchema {
  return {
    type: "object",
    properties: { ...properties, error: refusalSchema },
    anyOf: [{ required }, { required: ["error"] }],
  };
}

const uuid = { type: "string", format: "uuid" } as const;
const instant = { type: "string", format: "date-time" } as const;
const nullable = (schema: Record<string, unknown>) => ({ anyOf: [schema, { type: "null" }] });

const statusProperties = {
  request_id: { ...uuid, description: "Your id of the request: pass it to check_request and cancel_request." },
  status: {
    type: "string",
    enum: ["queued", "approved", "denied", "cancelled", "expired"],
    description:
      "queued: the person has not answered yet. approved / denied: they decided. cancelled, expired: final, no proof.",
  },
  ttl_at: { ...instant, description: "When a queued request expires unanswered." },
  resolved_at: nullable(instant),
  verdict: nullable({ type: "string", enum: ["approve", "denied"] }),
  ceremony_id: nullable(uuid),
  proof: nullable({
    type: "string",
    description: "The Proof of Resolution (an ES256 JWT) of an approved or denied request: keep it as evidence.",
  }),
  proof_claims: nullable({
    type: "object",
    description: "The proof's claims, decoded (not verified: use verify_proof for that).",
  }),
  quorum: nullable({
    type: "object",
    description: "A request to several people: the approvals that approve it and the denials that deny it.",
  }),
  decisions: nullable({
    type: "array",
    items: { type: "object" },
    description:
      "A request to several people: each one's opaque_id, verdict (null while they have not decided) and decided_at.",
  }),
} as const;
const statusRequired = ["request_id", "status", "ttl_at", "verdict", "proof", "proof_claims"] as const;

const waitSeconds = {
  type: "integer",
  minimum: 0,
  maximum: 25,
  description:
    "How long to wait for the person's answer before returning (0-25 s, default 0: return at once). While queued, call check_request again.",
} as const;

const linkCode = { type: "string", pattern: "^[2-9A-HJKMNP-Z]{8}$" } as const;

/** check-status's answer as ask_person and check_request return it, with the proof's claims decoded. */
function statusResult(requestId: string, answer: Answer): Answer {
  if (!answer.ok) return answer;
  const { status, ttl_at, resolved_at, verdict, ceremony_id, resolution_jwt, quorum, decisions } = answer.data;
  const proof = typeof resolution_jwt === "string" ? resolution_jwt : null;
  return {
    ok: true,
    data: {
      request_id: requestId,
      status,
      ttl_at,
      resolved_at: resolved_at ?? null,
      verdict: verdict ?? null,
      ceremony_id: ceremony_id ?? null,
      proof,
      proof_claims: proof === null ? null : decodeJwt(proof),
      quorum: quorum ?? null,
      decisions: decisions ?? null,
    },
  };
}

/** check-status with progress notifications while it holds: one as the wait begins, then every 5 seconds. */
async function awaitAnswer(
  operations: AgentOperations,
  requestId: string,
  waitSeconds: number,
  context: ToolContext,
): Promise<Answer> {
  if (waitSeconds === 0)
    return statusResult(requestId, await operations.checkStatus({ request_id: requestId }, context.signal));
  const message = "waiting for the person to answer";
  await context.progress(0, waitSeconds, message);
  let waited = 0;
  const ticker = setInterval(() => {
    waited = Math.min(waited + progressEverySeconds, waitSeconds);
    context.progress(waited, waitSeconds, message).catch(() => {});
  }, progressEverySeconds * 1000);
  try {
    return statusResult(
      requestId,
      await operations.checkStatus({ request_id: requestId, wait_seconds: waitSeconds }, context.signal),
    );
  } finally {
    clearInterval(ticker);
  }
}

const progressEverySeconds = 5;

const linkPerson: AgentTool = {
  name: "link_person",
  title: "Link a person",
  description:
    "Start linking a person to you, so that you can later ask them to approve actions. Returns a link code (8 characters) and link_url / qr_code_url for the person: show them one of these; they claim the code in the service's app within 10 minutes, once. Then call check_link with the link_code until its status is claimed and keep the opaque_id it returns: ask_person needs it. Give person_label, your name for the person, when you will ask them together with others: the person sees it when they link, and the others asked on the same card see them by it.",
  inputSchema: {
    type: "object",
    properties: {
      person_label: {
        type: "string",
        minLength: 1,
        maxLength: 64,
        description:
          'Your name for the person, plain text on one line (for example "Dana, finance"). No links and no characters that hide or reorder text.',
      },
    },
    additionalProperties: false,
  },
  outputSchema: resultSchema(
    {
      link_code: linkCode,
      link_url: { type: "string", description: "The app's link that claims the code." },
      qr_code_url: { type: "string", description: "link_url as an SVG QR code image." },
      expires_at: instant,
    },
    ["link_code", "link_url", "qr_code_url", "expires_at"],
  ),
  run: (input, operations) =>
    operations.bindSession(typeof input.person_label === "string" ? { person_label: input.person_label } : {}),
  linkToOpen: (result) => ({
    url: String(result.qr_code_url),
    message: `To link you to this agent, scan this code with the app, or enter ${String(result.link_code)} in it, within 10 minutes.`,
  }),
};

const checkLink: AgentTool = {
  name: "check_link",
  title: "Check a link",
  description:
    "Whether the person claimed the link code you got from link_person. status pending: not yet (ask again shortly); claimed: linked, and opaque_id is the person's id for you, to pass to ask_person; expired: the 10 minutes passed, start again with link_person.",
  inputSchema: {
    type: "object",
    properties: { link_code: { ...linkCode, description: "From link_person." } },
    required: ["link_code"],
    additionalProperties: false,
  },
  outputSchema: resultSchema(
    {
      status: { type: "string", enum: ["pending", "claimed", "expired"] },
      opaque_id: nullable({ type: "string", description: "The person's id for you; null until claimed." }),
      bound_at: nullable(instant),
      person_label: nullable({ type: "string", description: "The person_label you gave link_person; null if none." }),
    },
    ["status", "opaque_id", "bound_at"],
  ),
  run: (input, operations) => operations.checkBinding({ link_code: String(input.link_code) }),
};

const cardProperties = {
  summary_title: {
    type: "string",
    minLength: 1,
    maxLength: 120,
    description: "The card's headline: what you ask to do, in the person's words.",
  },
  category: { type: "string", minLength: 1, maxLength: 80, description: "One of the categories you are allowed." },
  summary_detail: {
    type: "object",
    properties: {
      label: { type: "string", minLength: 1, maxLength: 40 },
      value: { type: "string", minLength: 1, maxLength: 80 },
    },
    required: ["label", "value"],
    additionalProperties: false,
    description: "One detail row, for example the amount.",
  },
  trusted_account_id: { ...uuid, description: "The linked account the action goes through, if any." },
  adaptive_card_payload: {
    type: "object",
    description:
      "An Adaptive Card 1.5 shown when the person expands the card: TextBlock, FactSet, ColumnSet, Container, Table and Image (bundled assets only). A card the content-safety layer refuses is an error listing its violations: fix them and ask again.",
  },
} as const;

const askPerson: AgentTool = {
  name: "ask_person",
  title: "Ask a person to approve",
  description:
    "Ask a linked person (opaque_id), or several (approvers with a quorum), to approve or deny an action before you take it. With approvers, the request is approved once quorum.approve of them approved and denied once quorum.deny of them denied (default 1: one denial ends it). They see a card with your summary_title, category, summary_detail and adaptive_card_payload, and answer with a passkey. With wait_seconds (up to 25) the call waits for their answer; otherwise, or while still queued, poll with check_request. Take the action only when status is approved; approved and denied come with a proof signed over exactly what the person saw. request_id makes a retry safe: asking again with the same request_id returns the first request.",
  inputSchema: {
    type: "object",
    properties: {
      opaque_id: {
        type: "string",
        minLength: 4,
        maxLength: 64,
        description: "The person, as check_link returned them. Give this or approvers, not both.",
      },
      approvers: {
        type: "array",
        minItems: 2,
        maxItems: 10,
        uniqueItems: true,
        items: { type: "string", minLength: 4, maxLength: 64 },
        description: "Several linked people (their opaque_ids from check_link) who all see the card; needs quorum.",
      },
      quorum: {
        type: "object",
        properties: {
          approve: { type: "integer", minimum: 1, maximum: 10, description: "Approvals that approve the request." },
          deny: { type: "integer", minimum: 1, maximum: 10, description: "Denials that deny it (default 1)." },
        },
        required: ["approve"],
        additionalProperties: false,
        description: "With approvers: how many approvals approve and how many denials deny.",
      },
      ...cardProperties,
      ttl_seconds: {
        type: "integer",
        minimum: 60,
        maximum: 86400,
        description: "How long the person has to answer (default 600).",
      },
      request_id: {
        type: "string",
        format: "uuid",
        description: "Your id of this request (a UUID v4); one is made when omitted.",
      },
      wait_seconds: waitSeconds,
    },
    required: ["summary_title", "category"],
    additionalProperties: false,
  },
  outputSchema: resultSchema({ ...statusProperties, card_id: uuid }, [...statusRequired, "card_id"]),
  async run(input, operations, context) {
    const requestId = typeof input.request_id === "string" ? input.request_id : randomUUID();
    const { summary_title, category, summary_detail, trusted_account_id } = input;
    const proposed = await operations.inquire({
      request_id: requestId,
      opaque_id: input.opaque_id,
      approvers: input.approvers,
      quorum: input.quorum,
      action: { summary_title, category, summary_detail, trusted_account_id },
      adaptive_card_payload: input.adaptive_card_payload,
      ttl_seconds: input.ttl_seconds,
    });
    if (!proposed.ok) return proposed;
    const waitFor = typeof input.wait_seconds === "number" ? input.wait_seconds : 0;
    const answer =
      waitFor === 0 && proposed.data.idempotent_replay !== true
        ? statusResult(requestId, {
            ok: true,
            data: { status: proposed.data.status, ttl_at: proposed.data.ttl_at },
          })
        : await awaitAnswer(operations, requestId, waitFor, context);
    return answer.ok ? { ok: true, data: { ...answer.data, card_id: proposed.data.card_id } } : answer;
  },
};

const checkRequest: AgentTool = {
  name: "check_request",
  title: "Check a request",
  description:
    "The state of a request you made with ask_person: queued (no answer yet), approved, denied, cancelled or expired, with the proof once approved or denied. With wait_seconds (up to 25) it waits for the answer while the request is queued.",
  inputSchema: {
    type: "object",
    properties: { request_id: { ...uuid, description: "From ask_person." }, wait_seconds: waitSeconds },
    required: ["request_id"],
    additionalProperties: false,
  },
  outputSchema: resultSchema(statusProperties, statusRequired),
  run: (input, operations, context) =>
    awaitAnswer(operations, String(input.request_id), Number(input.wait_seconds ?? 0), context),
};

const cancelRequest: AgentTool = {
  name: "cancel_request",
  title: "Cancel a request",
  description:
    "Withdraw a request the person has not answered yet (status becomes cancelled; no proof). A request already answered, cancelled or expired is left as it is and reported with already_resolved: true.",
  inputSchema: {
    type: "object",
    properties: {
      request_id: { ...uuid, description: "From ask_person." },
      reason: { type: "string", maxLength: 200, description: "Why, for the audit log." },
    },
    required: ["request_id"],
    additionalProperties: false,
  },
  outputSchema: resultSchema(
    {
      status: statusProperties.status,
      card_id: uuid,
      cancelled_at: instant,
      already_resolved: { type: "boolean" },
    },
    ["status", "card_id"],
  ),
  run: (input, operations) =>
    operations.cancel({
      request_id: String(input.request_id),
      ...(typeof input.reason === "string" && { reason: input.reason }),
    }),
};

const verifyProof: AgentTool = {
  name: "verify_proof",
  title: "Verify a proof",
  description:
    "Check a Proof of Resolution offline: its signature against the service's published keys, its issuer, that it is a proof, that it is for request_id (when given), and that its card_digest matches the card you proposed, so the person saw exactly that card. valid false comes with the reason (for example card_mismatch, bad_signature, unknown_key).",
  inputSchema: {
    type: "object",
    properties: {
      proof: { type: "string", minLength: 1, description: "The proof from ask_person or check_request." },
      card: {
        type: "object",
        properties: cardProperties,
        required: ["summary_title", "category"],
        additionalProperties: false,
        description: "The card as you proposed it to ask_person.",
      },
      request_id: { ...uuid, description: "The request the proof must be for." },
    },
    required: ["proof", "card"],
    additionalProperties: false,
  },
  outputSchema: resultSchema(
    {
      valid: { type: "boolean" },
      reason: nullable({ type: "string", description: "Why the proof fails; null when valid." }),
      claims: nullable({ type: "object", description: "The claims, when the signature verified." }),
    },
    ["valid", "reason", "claims"],
  ),
  async run(input, operations) {
    const card = input.card as Record<string, unknown>;
    const { adaptive_card_payload, ...action } = card;
    const checked = await operations.verifier.verifyProof(String(input.proof), {
      card: {
        action: action as { summary_title: string; category: string },
        ...(adaptive_card_payload !== undefined && {
          adaptive_card_payload: adaptive_card_payload as Record<string, unknown>,
        }),
      },
      ...(typeof input.request_id === "string" && { requestId: input.request_id }),
    });
    return {
      ok: true,
      data: checked.valid
        ? { valid: true, reason: null, claims: checked.claims }
        : { valid: false, reason: checked.reason, claims: checked.claims ?? null },
    };
  },
};

/** The tools, in the order a model meets them. */
export const agentTools: readonly AgentTool[] = [
  linkPerson,
  checkLink,
  askPerson,
  checkRequest,
  cancelRequest,
  verifyProof,
];
