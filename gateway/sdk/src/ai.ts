import { jsonSchema, type Tool, tool } from "ai";
import type { AskInput } from "./agents.ts";
import type { Svc } from "./client.ts";
import type { ProofClaims } from "./verifier.ts";

/** What the model proposes: the card the person sees. */
export interface AskPersonInput {
  summary_title: string;
  category: string;
  summary_detail?: { label: string; value: string };
  /** How long the person has to answer (the service's bounds apply). */
  ttl_seconds?: number;
}

/** What the tool returns to the model once the card resolved or expired. */
export interface AskPersonOutput {
  request_id: string;
  status: "approved" | "denied" | "expired" | "cancelled";
  verdict: "approve" | "denied" | null;
  /** The verified Proof of Resolution's claims (its `card_digest` is this card's); null without a verdict. */
  claims: ProofClaims | null;
}

export interface AskPersonToolOptions {
  /** The person's binding (`opaque_id` from check-binding): the code, not the model, decides whom it asks. */
  opaqueId: string;
  /** The tool's description for the model; a default explains when to use it. */
  description?: string;
}

const defaultDescription =
  "Ask the person you act for to approve an action before you take it. They see a card with the title, category " +
  "and detail you give, and approve or deny it on their own device. Use it before any payment, purchase, sending, " +
  "deleting or other action they would want to confirm; act only when status is approved. It waits for their answer.";

const inputSchema = jsonSchema<AskPersonInput>({
  type: "object",
  properties: {
    summary_title: {
      type: "string",
      minLength: 1,
      description: "The action in a few words, as the person will read it.",
    },
    category: { type: "string", minLength: 1, description: "One of the categories the agent is registered for." },
    summary_detail: {
      type: "object",
      properties: { label: { type: "string" }, value: { type: "string" } },
      required: ["label", "value"],
      additionalProperties: false,
      description: "One labelled fact the person needs to decide (an amount, a recipient).",
    },
    ttl_seconds: { type: "integer", minimum: 1, description: "How long the person has to answer." },
  },
  required: ["summary_title", "category"],
  additionalProperties: false,
});

/**
 * A Vercel AI SDK tool that proposes a card to the bound person and waits for their answer with `svc.agents.ask()`
 * (an agent key's client). It returns the status, the verdict and the claims of the proof, verified against this
 * card. The generation's abort signal cancels the card. A refusal of the service throws its `SvcError`, which the
 * framework hands the model as the tool's error.
 */
export function askPersonTool(svc: Svc, options: AskPersonToolOptions): Tool<AskPersonInput, AskPersonOutput> {
  return tool({
    description: options.description ?? defaultDescription,
    inputSchema,
    async execute({ summary_title, category, summary_detail, ttl_seconds }, { abortSignal }) {
      const card: AskInput = {
        opaque_id: options.opaqueId,
        action: { summary_title, category, ...(summary_detail && { summary_detail }) },
        ...(ttl_seconds !== undefined && { ttl_seconds }),
      };
      const answer = await svc.agents.ask(card, abortSignal ? { signal: abortSignal } : {});
      return { request_id: answer.requestId, status: answer.status, verdict: answer.verdict, claims: answer.claims };
    },
  });
}
