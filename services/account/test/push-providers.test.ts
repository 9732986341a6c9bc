import { generateKeyPairSync } from "node:crypto";
import { ConfigError } from "@svc/platform";
import { decodeJwt, decodeProtectedHeader, importSPKI, jwtVerify } from "jose";
import { describe, expect, it } from "vitest";
import { apnsProviderToken, apnsRequest } from "../src/push/apns.ts";
import { configuredProviders } from "../src/push/configured-providers.ts";
import { fcmMessageRequest, fcmTokenRequest } from "../src/push/fcm.ts";

/**
 * The push providers' requests as data: the APNs provider token and HTTP/2 request, FCM's OAuth 2.0 grant
 * and HTTP v1 message, and which providers the configuration makes. Nothing here reaches a network.
 */
const now = new Date("2026-11-24T09:00:00Z");
const pem = (type: "ec" | "rsa") => {
  const pair =
    type === "ec"
      ? generateKeyPairSync("ec", { namedCurve: "P-256" })
      : generateKeyPairSync("rsa", { modulusLength: 2048 });
  return {
    privateKey: pair.privateKey.export({ type: "pkcs8", format: "pem" }).toString(),
    publicKey: pair.publicKey.export({ type: "spki", format: "pem" }).toString(),
  };
};
const notification = { kind: "gate_request" as const, title: "A verification request is waiting for you" };

describe("APNs", () => {
  const key = pem("ec");
  const settings = {
    teamId: "TEAM123456",
    keyId: "KEY7654321",
    privateKeyPem: key.privateKey,
    topic: "com.example.app",
    origin: "https://api.sandbox.push.apple.com",
  };

  it("signs the provider token with ES256, kid in the header, the team as iss and the issue time", async () => {
    const token = await apnsProviderToken(settings, now);
    expect(decodeProtectedHeader(token)).toEqual({ alg: "ES256", kid: "KEY7654321" });
    expect(decodeJwt(token)).toEqual({ iss: "TEAM123456", iat: now.getTime() / 1000 });
    await expect(
      jwtVerify(token, await importSPKI(key.publicKey, "ES256"), { currentDate: now }),
    ).resolves.toBeDefined();
  });

  it("posts an alert to /3/device/<token> with the bearer token, the topic and the push type", () => {
    const request = apnsRequest(settings, "provider.jwt", "a1b2c3", notification);
    expect(request).toEqual({
      url: "https://api.sandbox.push.apple.com/3/device/a1b2c3",
      method: "POST",
      headers: {
        authorization: "bearer provider.jwt",
        "apns-topic": "com.example.app",
        "apns-push-type": "alert",
        "apns-priority": "10",
        "content-type": "application/json",
      },
      body: expect.any(String),
    });
    expect(JSON.parse(request.body)).toEqual({
      aps: { alert: { title: notification.title }, sound: "default" },
      kind: "gate_request",
    });
  });
});

describe("FCM", () => {
  const key = pem("rsa");
  const account = {
    project_id: "svc-app",
    client_email: "push@svc-app.iam.gserviceaccount.com",
    private_key: key.privateKey,
    token_uri: "https://oauth2.googleapis.com/token",
  };

  it("asks for an access token with a JWT-bearer grant signed RS256 by the service account", async () => {
    const request = await fcmTokenRequest(account, now);
    expect(request).toMatchObject({
      url: "https://oauth2.googleapis.com/token",
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
    });
    const form = new URLSearchParams(request.body);
    expect(form.get("grant_type")).toBe("urn:ietf:params:oauth:grant-type:jwt-bearer");
    const assertion = form.get("assertion") ?? "";
    expect(decodeProtectedHeader(assertion)).toEqual({ alg: "RS256", typ: "JWT" });
    const iat = now.getTime() / 1000;
    expect(decodeJwt(assertion)).toEqual({
      iss: account.client_email,
      aud: account.token_uri,
      scope: "https://www.googleapis.com/auth/firebase.messaging",
      iat,
      exp: iat + 3600,
    });
    await expect(
      jwtVerify(assertion, await importSPKI(key.publicKey, "RS256"), { currentDate: now }),
    ).resolves.toBeDefined();
  });

  it("sends one message to the registration token through the HTTP v1 API of the project", () => {
    const request = fcmMessageRequest(account, "ya29.token", "fcm-registration", {
      kind: "agent_card",
      title: "An agent asks for your approval",
    });
    expect(request).toMatchObject({
      url: "https://fcm.googleapis.com/v1/projects/svc-app/messages:send",
      method: "POST",
      headers: { authorization: "Bearer ya29.token", "content-type": "application/json" },
    });
    expect(JSON.parse(request.body)).toEqual({
      message: {
        token: "fcm-registration",
        notification: { title: "An agent asks for your approval" },
        data: { kind: "agent_card" },
        android: { priority: "high" },
      },
    });
  });
});

describe("the configured providers", () => {
  const none = {
    apnsTeamId: "",
    apnsKeyId: "",
    apnsPrivateKey: "",
    apnsTopic: "",
    apnsOrigin: "https://api.push.apple.com",
    fcmServiceAccount: "",
  };

  it("are none by default", () => {
    expect(configuredProviders(none)).toEqual({});
  });

  it("are APNs for iOS and FCM for Android and the web when configured", () => {
    const providers = configuredProviders({
      ...none,
      apnsTeamId: "T",
      apnsKeyId: "K",
      apnsPrivateKey: pem("ec").privateKey,
      apnsTopic: "com.example.app",
      fcmServiceAccount: JSON.stringify({ project_id: "p", client_email: "e", private_key: "k", token_uri: "u" }),
    });
    expect(providers.ios?.name).toBe("apns");
    expect(providers.android?.name).toBe("fcm");
    expect(providers.web).toBe(providers.android);
  });

  it("refuse a provider configured in part", () => {
    expect(() => configuredProviders({ ...none, apnsTeamId: "T" })).toThrow(ConfigError);
    expect(() => configuredProviders({ ...none, fcmServiceAccount: "{}" })).toThrow(ConfigError);
    expect(() => configuredProviders({ ...none, fcmServiceAccount: "not json" })).toThrow(ConfigError);
  });
});
