import { WebhookVerificationError as SignatureError, Webhook } from "standardwebhooks";
import { SvcError } from "./errors.ts";

type GateShared = {
  environment: "development" | "production";
  /** `census` for a request made against a gate; absent for a server-created request that names no gate. */
  product?: string;
  /** Only the keys the partner supplied to create-session and create-verification-link. */
  metadata?: Record<string, unknown>;
};

export type GateHumanVerified = GateShared & {
  type: "gate.human_verified";
  event_id: string;
  request_id: string;
  verified_at: string;
  verdict: "pass";
  trusted: boolean;
  first_time: boolean;
  /** Present only when `trusted` is true. */
  handle?: string;
};

export type GateUnavailable = GateShared & {
  type: "gate.unavailable";
  event_id: string;
  request_id: string;
  verdict?: "unavailable";
} & (
    | {
        failed_at: string;
        /** Treat a value not listed here as `internal_error`. */
        reason: "user_denied" | "device_lock_required" | "platform_declined" | "internal_error" | (string & {});
        /** For logs; do not parse. */
        error_message?: string;
        failure_code?: "already_trusted" | "rebind_requires_prior_id";
        failure_name?: "account_already_secured_here" | "account_held_by_another_id";
        expired_at?: never;
      }
    | { expired_at: string; failed_at?: never; reason?: never }
  );

export type AccountSecured = {
  type: "account.secured";
  handle: string;
  secured_at: string;
  surface_id: string | null;
};

export type AccountUnlinked = {
  type: "account.unlinked";
  handle: string;
  by: "human" | "platform";
  unlinked_at: string;
  reason: "human" | "platform" | "credential_changed";
  surface_id: string | null;
};

export type CardProposed = {
  type: "agents_ask.card.proposed";
  request_id: string;
  card_id: string;
  agent_id: string;
  agent_name: string;
  category: string;
  summary_title: string;
  ttl_at: string;
  /** `console_sandbox` for a console sandbox test proposal only. */
  source?: string;
};

export type ResolutionDecided = {
  type: "agents_ask.resolution.confirmed" | "agents_ask.resolution.denied";
  request_id: string;
  resolution_id: string;
  outcome: "confirmed" | "denied";
  /** The Proof of Resolution: check it with `verifyProof`. */
  proof_token: string;
  metadata: { card_id: string; ceremony_id: string; agent_id: string; agent_name: string };
};

export type ResolutionExpired = {
  type: "agents_ask.resolution.expired";
  request_id: string;
  card_id: string;
  outcome: "expired";
  metadata: { agent_id: string; agent_name: string; summary_title: string };
};

/** Every event the spec lists, told apart by `type`. Fields may be added over time. */
export type WebhookEvent =
  | GateHumanVerified
  | GateUnavailable
  | AccountSecured
  | AccountUnlinked
  | CardProposed
  | ResolutionDecided
  | ResolutionExpired;

/** A delivery whose signature, timestamp or body does not hold: answer it with HTTP 400. */
export class WebhookVerificationError extends SvcError {
  override name = "WebhookVerificationError";
}

export type WebhookHeaders = Headers | Record<string, string | string[] | undefined>;

const signatureHeaders = ["webhook-id", "webhook-timestamp", "webhook-signature"] as const;

/**
 * Checks a delivery with Standard Webhooks: the signature over id, timestamp and the raw body under the
 * endpoint's `whsec_` secret (any of its space-separated signatures), and a `webhook-timestamp` within 5
 * minutes either side of this clock. Pass the body exactly as received, before any JSON parsing.
 */
export function verifyWebhook(rawBody: string | Uint8Array, headers: WebhookHeaders, secret: string): WebhookEvent {
  const read = (name: string) => {
    const value = headers instanceof Headers ? headers.get(name) : headerOf(headers, name);
    return Array.isArray(value) ? value.join(" ") : (value ?? undefined);
  };
  const received: Record<string, string> = {};
  for (const name of signatureHeaders) {
    const value = read(name);
    if (value === undefined) throw refused(`the delivery has no ${name} header`);
    received[name] = value;
  }
  const body = typeof rawBody === "string" ? rawBody : new TextDecoder().decode(rawBody);
  let event: unknown;
  try {
    event = new Webhook(secret).verify(body, received);
  } catch (cause) {
    throw refused(cause instanceof SignatureError ? cause.message : "the delivery could not be read", cause);
  }
  if (typeof event !== "object" || event === null || typeof (event as { type?: unknown }).type !== "string")
    throw refused("the delivery is not an event");
  return event as WebhookEvent;
}

function headerOf(headers: Record<string, string | string[] | undefined>, name: string) {
  for (const [key, value] of Object.entries(headers)) if (key.toLowerCase() === name) return value;
  return undefined;
}

const refused = (message: string, cause?: unknown) =>
  new WebhookVerificationError({ statusCode: 400, code: "webhook_invalid", message }, { cause });
