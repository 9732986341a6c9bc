import { importPKCS8, SignJWT } from "jose";
import { type ProviderRequest, type PushNotification, type PushProvider, PushRefused } from "./push-provider.ts";

/** The fields of a Google service-account key file that FCM's HTTP v1 API needs. */
export interface FcmServiceAccount {
  project_id: string;
  client_email: string;
  private_key: string;
  token_uri: string;
}

const scope = "https://www.googleapis.com/auth/firebase.messaging";
/** Google issues access tokens for an hour; renew a little before. */
const assertionLifetimeS = 3600;
const renewBeforeMs = 5 * 60_000;

/** The OAuth 2.0 JWT-bearer grant (RFC 7523) that exchanges the service account's signed assertion for an access token. */
export async function fcmTokenRequest(account: FcmServiceAccount, now: Date): Promise<ProviderRequest> {
  const iat = Math.floor(now.getTime() / 1000);
  const assertion = await new SignJWT({ scope })
    .setProtectedHeader({ alg: "RS256", typ: "JWT" })
    .setIssuer(account.client_email)
    .setAudience(account.token_uri)
    .setIssuedAt(iat)
    .setExpirationTime(iat + assertionLifetimeS)
    .sign(await importPKCS8(account.private_key, "RS256"));
  return {
    url: account.token_uri,
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ grant_type: "urn:ietf:params:oauth:grant-type:jwt-bearer", assertion }).toString(),
  };
}

/** One message to one registration token through the HTTP v1 API. */
export function fcmMessageRequest(
  account: FcmServiceAccount,
  accessToken: string,
  registrationToken: string,
  notification: PushNotification,
): ProviderRequest {
  return {
    url: `https://fcm.googleapis.com/v1/projects/${encodeURIComponent(account.project_id)}/messages:send`,
    method: "POST",
    headers: { authorization: `Bearer ${accessToken}`, "content-type": "application/json" },
    body: JSON.stringify({
      message: {
        token: registrationToken,
        notification: { title: notification.title },
        data: { kind: notification.kind },
        android: { priority: "high" },
      },
    }),
  };
}

/** Firebase Cloud Messaging (Android and web devices): HTTP v1 with a service account's OAuth 2.0 access token. */
export class FcmProvider implements PushProvider {
  readonly name = "fcm";
  readonly #account: FcmServiceAccount;
  readonly #now: () => Date;
  #accessToken: { value: string; until: number } | undefined;

  constructor(account: FcmServiceAccount, now: () => Date = () => new Date()) {
    this.#account = account;
    this.#now = now;
  }

  async send(registrationToken: string, notification: PushNotification): Promise<void> {
    const request = fcmMessageRequest(this.#account, await this.#token(), registrationToken, notification);
    const response = await post(request);
    if (!response.ok) throw new PushRefused(this.name, response.status, await response.text());
    await response.body?.cancel();
  }

  async #token(): Promise<string> {
    const now = this.#now();
    if (this.#accessToken && this.#accessToken.until > now.getTime()) return this.#accessToken.value;
    const response = await post(await fcmTokenRequest(this.#account, now));
    if (!response.ok) throw new PushRefused("Google OAuth", response.status, await response.text());
    const granted = (await response.json()) as { access_token: string; expires_in: number };
    this.#accessToken = {
      value: granted.access_token,
      until: now.getTime() + granted.expires_in * 1000 - renewBeforeMs,
    };
    return granted.access_token;
  }
}

const post = (request: ProviderRequest) =>
  fetch(request.url, {
    method: request.method,
    headers: request.headers,
    body: request.body,
    signal: AbortSignal.timeout(10_000),
  });
