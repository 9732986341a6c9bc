/** What a push says: the device shows `title` and, opened, goes to the inbox. Nothing personal in it. */
export interface PushNotification {
  kind: "gate_request" | "agent_card";
  title: string;
}

/** One kind of HTTP request a provider sends, as data, so its shape is testable without a network. */
export interface ProviderRequest {
  url: string;
  method: "POST";
  headers: Record<string, string>;
  body: string;
}

/**
 * A push service (APNs, FCM). `send` rejects when the provider refused the notification or could not be
 * reached; the caller counts it and goes on, since a push is best effort.
 */
export interface PushProvider {
  readonly name: string;
  send(pushToken: string, notification: PushNotification): Promise<void>;
}

/** A provider's refusal, with what it answered. */
export class PushRefused extends Error {
  constructor(provider: string, status: number, body: string) {
    super(`${provider} answered ${status}: ${body.slice(0, 200)}`);
  }
}
