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
