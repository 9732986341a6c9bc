import { connect } from "node:http2";
import { importPKCS8, SignJWT } from "jose";
import { type ProviderRequest, type PushNotification, type PushProvider, PushRefused } from "./push-provider.ts";

export interface ApnsSettings {
  /** The Apple developer team (the provider token's `iss`). */
  teamId: string;
  /** The id of the APNs auth key (the provider token's `kid`). */
  keyId: string;
  /** The .p8 auth key: PKCS #8 PEM of a P-256 key. */
  privateKeyPem: string;
  /** The app's bundle id (`apns-topic`). */
  topic: string;
  /** `https://api.push.apple.com` in production, `https://api.sandbox.push.apple.com` for development builds. */
  origin: string;
}

/** Apple accepts a provider token for an hour and refuses one renewed more often than every 20 minutes. */
const tokenLifetimeMs = 40 * 60_000;

/** The provider token: an ES256 JWT with `kid` in the header and the team and issue time as claims. */
export async function apnsProviderToken(settings: ApnsSettings, now: Date): Promise<string> {
  const key = await importPKCS8(settings.privateKeyPem, "ES256");
  return new SignJWT({})
    .setProtectedHeader({ alg: "ES256", kid: settings.keyId })
    .setIssuer(settings.teamId)
    .setIssuedAt(Math.floor(now.getTime() / 1000))
    .sign(key);
}

/** The HTTP/2 request of one alert to one device token. */
export function apnsRequest(
  settings: ApnsSettings,
  providerToken: string,
  deviceToken: string,
  notification: PushNotification,
): ProviderRequest {
  return {
    url: `${settings.origin}/3/device/${encodeURIComponent(deviceToken)}`,
    method: "POST",
    headers: {
      authorization: `bearer ${providerToken}`,
      "apns-topic": settings.topic,
      "apns-push-type": "alert",
      "apns-priority": "10",
      "content-type": "application/json",
    },
    body: JSON.stringify({ aps: { alert: { title: notification.title }, sound: "default" }, kind: notification.kind }),
  };
}

/** APNs over HTTP/2 with a provider token (token-based authentication), renewed every 40 minutes. */
export class ApnsProvider implements PushProvider {
  readonly name = "apns";
  readonly #settings: ApnsSettings;
  readonly #now: () => Date;
  #token: { value: string; until: number } | undefined;

  constructor(settings: ApnsSettings, now: () => Date = () => new Date()) {
    this.#settings = settings;
    this.#now = now;
  }

  async send(deviceToken: string, notification: PushNotification): Promise<void> {
    const request = apnsRequest(this.#settings, await this.#providerToken(), deviceToken, notification);
    const { status, body } = await postHttp2(request);
    if (status !== 200) throw new PushRefused(this.name, status, body);
  }

  async #providerToken(): Promise<string> {
    const now = this.#now();
    if (this.#token && this.#token.until > now.getTime()) return this.#token.value;
    const value = await apnsProviderToken(this.#settings, now);
    this.#token = { value, until: now.getTime() + tokenLifetimeMs };
    return value;
  }
}

/** One request on a fresh HTTP/2 session (pushes are rare: one per new request or card), 10 s at most. */
function postHttp2(request: ProviderRequest): Promise<{ status: number; body: string }> {
  const url = new URL(request.url);
  return new Promise((resolve, reject) => {
    const session = connect(url.origin);
    session.setTimeout(10_000, () => session.destroy(new Error("APNs did not answer within 10 s")));
    session.on("error", reject);
    const stream = session.request({ ":method": request.method, ":path": url.pathname, ...request.headers });
    let status = 0;
    let body = "";
    stream.on("response", (headers) => {
      status = Number(headers[":status"]);
    });
    stream.setEncoding("utf8");
    stream.on("data", (chunk: string) => {
      body += chunk;
    });
    stream.on("end", () => {
      session.close();
      resolve({ status, body });
    });
    stream.on("error", reject);
    stream.end(request.body);
  });
}
