/**
 * The browser's WebAuthn ceremonies with the JSON forms the app API speaks (creation and request
 * options in, RegistrationResponseJSON and AuthenticationResponseJSON out).
 */
export const passkeysSupported = (): boolean =>
  typeof PublicKeyCredential !== "undefined" && typeof PublicKeyCredential.parseRequestOptionsFromJSON === "function";

export async function createPasskey(options: PublicKeyCredentialCreationOptionsJSON): Promise<unknown> {
  const credential = (await navigator.credentials.create({
    publicKey: PublicKeyCredential.parseCreationOptionsFromJSON(options),
  })) as PublicKeyCredential | null;
  if (!credential) throw new Error("no passkey was created");
  return credential.toJSON();
}

export async function assertPasskey(options: PublicKeyCredentialRequestOptionsJSON): Promise<unknown> {
  const credential = (await navigator.credentials.get({
    publicKey: PublicKeyCredential.parseRequestOptionsFromJSON(options),
  })) as PublicKeyCredential | null;
  if (!credential) throw new Error("no passkey answered");
  return credential.toJSON();
}

/**
 * The browser's word that this device cannot verify the person (no screen lock or biometric): a prompt
 * that asked for user verification was refused, and the browser has no user-verifying platform
 * authenticator. A refusal on a device that has one is a dismissed prompt, which may be tried again.
 */
export async function cannotVerifyUser(refusal: unknown): Promise<boolean> {
  if (!(refusal instanceof DOMException && refusal.name === "NotAllowedError")) return false;
  return !(await PublicKeyCredential.isUserVerifyingPlatformAuthenticatorAvailable().catch(() => true));
}
