import {
  createHash,
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  type KeyObject,
  randomBytes,
  sign,
} from "node:crypto";
import type {
  AuthenticationResponseJSON,
  PublicKeyCredentialCreationOptionsJSON,
  PublicKeyCredentialRequestOptionsJSON,
  RegistrationResponseJSON,
} from "@simplewebauthn/server";
import { encodeCbor } from "./cbor-encoding.ts";

/**
 * A WebAuthn authenticator in software: one P-256 (ES256) credential that registers with a `none`
 * attestation and signs assertions, byte for byte as a platform authenticator does (authenticator
 * data with the UP and UV flags, AT on registration, a signature counter, and client data naming the
 * challenge, origin and ceremony type). Sandbox humans confirm with it, through the same verification
 * path as a real passkey; tests everywhere use it as the person's phone.
 */

/** The options ask for something this authenticator cannot give (another algorithm, another credential). */
export class AuthenticatorRefusal extends Error {}

export interface SoftwarePasskeyState {
  /** base64url */
  credentialId: string;
  /** PKCS#8 DER */
  privateKey: Buffer;
  /** The counter of the last signature made; the next assertion reports one more. */
  signCount: number;
  /** base64url user handle recorded at registration, returned with assertions; null before registration. */
  userHandle: string | null;
}

const flag = { userPresent: 0x01, userVerified: 0x04, attestedCredentialData: 0x40 } as const;
const es256 = -7;
/** A software authenticator has no model to attest: an all-zero AAGUID, as with `none` attestation. */
const aaguid = Buffer.alloc(16);

export class SoftwareAuthenticator {
  readonly credentialId: string;
  readonly #privateKey: KeyObject;
  #signCount: number;
  #userHandle: string | null;

  private constructor(state: {
    credentialId: string;
    privateKey: KeyObject;
    signCount: number;
    userHandle: string | null;
  }) {
    this.credentialId = state.credentialId;
    this.#privateKey = state.privateKey;
    this.#signCount = state.signCount;
    this.#userHandle = state.userHandle;
  }

  /** A new credential: a fresh P-256 key and a random 32-byte credential id. */
  static create(): SoftwareAuthenticator {
    const { privateKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
    return new SoftwareAuthenticator({
      credentialId: randomBytes(32).toString("base64url"),
      privateKey,
      signCount: 0,
      userHandle: null,
    });
  }

  static restore(state: SoftwarePasskeyState): SoftwareAuthenticator {
    const privateKey = createPrivateKey({ key: state.privateKey, format: "der", type: "pkcs8" });
    return new SoftwareAuthenticator({
      credentialId: state.credentialId,
      privateKey,
      signCount: state.signCount,
      userHandle: state.userHandle,
    });
  }

  export(): SoftwarePasskeyState {
    return {
      credentialId: this.credentialId,
      privateKey: this.#privateKey.export({ format: "der", type: "pkcs8" }),
      signCount: this.#signCount,
      userHandle: this.#userHandle,
    };
  }

  get signCount(): number {
    return this.#signCount;
  }

  /** The credential public key as a COSE_Key (EC2, ES256, P-256), as registration carries it. */
  publicKeyCose(): Buffer {
    const jwk = this.#privateKey.export({ format: "jwk" });
    return encodeCbor([
      [1, 2],
      [3, es256],
      [-1, 1],
      [-2, Buffer.from(jwk.x as string, "base64url")],
      [-3, Buffer.from(jwk.y as string, "base64url")],
    ]);
  }

  /** navigator.credentials.create() answered with user presence and verification. */
  register(options: PublicKeyCredentialCreationOptionsJSON, origin: string): RegistrationResponseJSON {
    if (!options.pubKeyCredParams.some((param) => param.alg === es256))
      throw new AuthenticatorRefusal("the options do not accept ES256, the only algorithm of this authenticator");
    if (options.excludeCredentials?.some((excluded) => excluded.id === this.credentialId)) {
      throw new AuthenticatorRefusal("this credential is already registered (it is in excludeCredentials)");
    }
    this.#userHandle = options.user.id;
    const credentialId = Buffer.from(this.credentialId, "base64url");
    const credentialIdLength = Buffer.alloc(2);
    credentialIdLength.writeUInt16BE(credentialId.length);
    const authenticatorData = Buffer.concat([
      authenticatorDataHead(
        options.rp.id ?? hostOf(origin),
        flag.userPresent | flag.userVerified | flag.attestedCredentialData,
        this.#signCount,
      ),
      aaguid,
      credentialIdLength,
      credentialId,
      this.publicKeyCose(),
    ]);
    const attestationObject = encodeCbor([
      ["fmt", "none"],
      ["attStmt", []],
      ["authData", authenticatorData],
    ]);
    return {
      id: this.credentialId,
      rawId: this.credentialId,
      type: "public-key",
      response: {
        clientDataJSON: clientData("webauthn.create", options.challenge, origin).toString("base64url"),
        attestationObject: attestationObject.toString("base64url"),
        authenticatorData: authenticatorData.toString("base64url"),
        transports: ["internal"],
        publicKeyAlgorithm: es256,
        publicKey: createPublicKey(this.#privateKey).export({ format: "der", type: "spki" }).toString("base64url"),
      },
      authenticatorAttachment: "platform",
      clientExtensionResults: {},
    };
  }

  /**
   * navigator.credentials.get() answered: the counter goes up by one and the authenticator data and
   * client data hash are signed. `userVerified: false` plays an authenticator that only checked presence.
   */
  assert(
    options: PublicKeyCredentialRequestOptionsJSON,
    origin: string,
    behaviour: { userVerified?: boolean } = {},
  ): AuthenticationResponseJSON {
    const allowed = options.allowCredentials ?? [];
    if (allowed.length > 0 && !allowed.some((credential) => credential.id === this.credentialId)) {
      throw new AuthenticatorRefusal("the options allow other credentials only");
    }
    this.#signCount += 1;
    const flags = flag.userPresent | (behaviour.userVerified === false ? 0 : flag.userVerified);
    const authenticatorData = authenticatorDataHead(options.rpId ?? hostOf(origin), flags, this.#signCount);
    const clientDataJson = clientData("webauthn.get", options.challenge, origin);
    const signature = sign("sha256", Buffer.concat([authenticatorData, sha256(clientDataJson)]), this.#privateKey);
    return {
      id: this.credentialId,
      rawId: this.credentialId,
      type: "public-key",
      response: {
        clientDataJSON: clientDataJson.toString("base64url"),
        authenticatorData: authenticatorData.toString("base64url"),
        signature: signature.toString("base64url"),
        ...(this.#userHandle !== null && { userHandle: this.#userHandle }),
      },
      authenticatorAttachment: "platform",
      clientExtensionResults: {},
    };
  }
}

const sha256 = (data: Uint8Array): Buffer => createHash("sha256").update(data).digest();

/** rpIdHash, flags and the big-endian 32-bit signature counter. */
function authenticatorDataHead(rpId: string, flags: number, signCount: number): Buffer {
  const tail = Buffer.alloc(5);
  tail[0] = flags;
  tail.writeUInt32BE(signCount, 1);
  return Buffer.concat([sha256(Buffer.from(rpId, "utf8")), tail]);
}

function clientData(type: "webauthn.create" | "webauthn.get", challenge: string, origin: string): Buffer {
  return Buffer.from(JSON.stringify({ type, challenge, origin, crossOrigin: false }), "utf8");
}

/** A browser's default relying-party id: the origin's host. */
function hostOf(origin: string): string {
  try {
    return new URL(origin).hostname;
  } catch {
    throw new AuthenticatorRefusal(
      `the options name no relying party and ${JSON.stringify(origin)} is not a URL to take one from`,
    );
  }
}
