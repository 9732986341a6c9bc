import type { Event } from "@svc/proto/events/v1/events_pb.js";
import { refuse } from "./refusal.ts";

/** The webhook type of each payload case of the event envelope: one place that names them. */
export const typeOfPayloadCase = {
  gateHumanVerified: "gate.human_verified",
  gateUnavailable: "gate.unavailable",
  accountSecured: "account.secured",
  accountUnlinked: "account.unlinked",
  agentsAskCardProposed: "agents_ask.card.proposed",
  agentsAskResolutionConfirmed: "agents_ask.resolution.confirmed",
  agentsAskResolutionDenied: "agents_ask.resolution.denied",
  agentsAskResolutionExpired: "agents_ask.resolution.expired",
} as const satisfies Record<NonNullable<Event["payload"]["case"]>, string>;

export type WebhookType = (typeof typeOfPayloadCase)[keyof typeof typeOfPayloadCase];

export const webhookTypes: readonly WebhookType[] = Object.values(typeOfPayloadCase);

/** The spec's retired names and their replacements: never sent, and refused in a filter. */
export const retiredTypes: Readonly<Record<string, WebhookType>> = {
  "census.human_verified": "gate.human_verified",
  "verification.success": "gate.human_verified",
  "census.unavailable": "gate.unavailable",
  "census.human_unavailable": "gate.unavailable",
  "verification.failed": "gate.unavailable",
  "verification.expired": "gate.unavailable",
  "q.card.proposed": "agents_ask.card.proposed",
  "q.resolution.confirmed": "agents_ask.resolution.confirmed",
  "q.resolution.denied": "agents_ask.resolution.denied",
  "q.resolution.expired": "agents_ask.resolution.expired",
};

/** An endpoint's type filter, checked and in a stable order; empty means every type. */
export function parseTypeFilter(types: readonly string[]): WebhookType[] {
  const accepted = new Set<WebhookType>();
  for (const type of types) {
    const replacement = retiredTypes[type];
    if (replacement)
      throw refuse("invalid_argument", `"${type}" is a retired event type and is no longer sent; use "${replacement}"`);
    if (!webhookTypes.includes(type as WebhookType)) {
      throw refuse("invalid_argument", `unknown event type "${type}"; the types are ${webhookTypes.join(", ")}`);
    }
    accepted.add(type as WebhookType);
  }
  return webhookTypes.filter((type) => accepted.has(type));
}
