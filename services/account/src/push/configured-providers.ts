import { ConfigError } from "@svc/platform";
import { ApnsProvider } from "./apns.ts";
import { FcmProvider, type FcmServiceAccount } from "./fcm.ts";
import type { PushProvider } from "./push-provider.ts";

/** Which provider reaches a device of each platform; a platform without one is not pushed to. */
export type PushProviders = Partial<Record<"ios" | "android" | "web", PushProvider>>;

/**
 * The providers the configuration names (ACCOUNT_APNS_*, ACCOUNT_FCM_SERVICE_ACCOUNT): none by default, so
 * development and tests never call Apple or Google. A provider configured only in part stops the start.
 */
export function configuredProviders(config: {
  apnsTeamId: string;
  apnsKeyId: string;
  apnsPrivateKey: string;
  apnsTopic: string;
  apnsOrigin: string;
  fcmServiceAccount: string;
}): PushProviders {
  const providers: PushProviders = {};
  const apns = [config.apnsTeamId, config.apnsKeyId, config.apnsPrivateKey, config.apnsTopic];
  if (apns.some((value) => value !== "")) {
    if (apns.includes(""))
      throw new ConfigError(
        "ACCOUNT_APNS_TEAM_ID, ACCOUNT_APNS_KEY_ID, ACCOUNT_APNS_PRIVATE_KEY and ACCOUNT_APNS_TOPIC go together",
      );
    providers.ios = new ApnsProvider({
      teamId: config.apnsTeamId,
      keyId: config.apnsKeyId,
      privateKeyPem: config.apnsPrivateKey,
      topic: config.apnsTopic,
      origin: config.apnsOrigin,
    });
  }
  if (config.fcmServiceAccount !== "") {
    const account = serviceAccountOf(config.fcmServiceAccount);
    providers.android = new FcmProvider(account);
    providers.web = providers.android;
  }
  return providers;
}

function serviceAccountOf(raw: string): FcmServiceAccount {
  let parsed: Partial<FcmServiceAccount>;
  try {
    parsed = JSON.parse(raw) as Partial<FcmServiceAccount>;
  } catch {
    throw new ConfigError("ACCOUNT_FCM_SERVICE_ACCOUNT is not JSON: give the service account's key file");
  }
  const { project_id, client_email, private_key, token_uri } = parsed;
  if (!project_id || !client_email || !private_key || !token_uri)
    throw new ConfigError(
      "ACCOUNT_FCM_SERVICE_ACCOUNT lacks project_id, client_email, private_key or token_uri: give the service account's key file",
    );
  return { project_id, client_email, private_key, token_uri };
}
