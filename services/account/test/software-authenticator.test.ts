import {
  type AuthenticationResponseJSON,
  generateAuthenticationOptions,
  generateRegistrationOptions,
  verifyAuthenticationResponse,
  verifyRegistrationResponse,
  type WebAuthnCredential,
} from "@simplewebauthn/server";
import { beforeAll, describe, expect, it } from "vitest";
import { AuthenticatorRefusal, SoftwareAuthenticator } from "../src/sandbox/software-authenticator.ts";

const rpID = "verify.example";
const origin = "https://verify.example";

const registrationOptions = () =>
  generateRegistrationOptions({
    rpName: "svc",
    rpID,
    userName: "a-human",
    userID: new TextEncoder().encode("a-human"),
    attestationType: "none",
    authenticatorSelection: { residentKey: "required", userVerification: "required" },
    supportedAlgorithmIDs: [-7, -257],
  });

/** Re-encodes one base64url part of a response after changing its decoded bytes or JSON. */
function tamper(
  response: AuthenticationResponseJSON,
  part: "clientDataJSON" | "authenticatorData" | "signature",
  change: (bytes: Buffer) => Buffer,
): AuthenticationResponseJSON {
  const bytes = Buffer.from(response.response[part], "base64url");
  return { ...response, response: { ...response.response, [part]: change(bytes).toString("base64url") } };
}

const editClientData = (response: AuthenticationResponseJSON, edit: (data: Record<string, unknown>) => void) =>
  tamper(response, "clientDataJSON", (bytes) => {
    const data = JSON.parse(bytes.toString("utf8")) as Record<string, unknown>;
    edit(data);
    return Buffer.from(JSON.stringify(data));
  });

describe("software authenticator against @simplewebauthn/server", () => {
  const authenticator = SoftwareAuthenticator.create();
  let credential: WebAuthnCredential;

  beforeAll(async () => {
    const options = await registrationOptions();
    const verified = await verifyRegistrationResponse({
      response: authenticator.register(options, origin),
      expectedChallenge: options.challenge,
      expectedOrigin: origin,
      expectedRPID: rpID,
      requireUserVerification: true,
    });
    expect(verified.verified).toBe(true);
    credential = verified.registrationInfo!.credential;
  });

  it("registers: a none attestation of an ES256 credential with user verification and counter 0", async () => {
    const options = await registrationOptions();
    const fresh = SoftwareAuthenticator.create();
    const verified = await verifyRegistrationResponse({
      response: fresh.register(options, origin),
      expectedChallenge: options.challenge,
      expectedOrigin: origin,
      expectedRPID: rpID,
    });
    expect(verified.verified).toBe(true);
    expect(verified.registrationInfo).toMatchObject({
      fmt: "none",
      userVerified: true,
      credentialType: "public-key",
      rpID,
    });
    expect(verified.registrationInfo!.credential.id).toBe(fresh.credentialId);
    expect(verified.registrationInfo!.credential.counter).toBe(0);
    expect(Buffer.from(verified.registrationInfo!.credential.publicKey).equals(fresh.publicKeyCose())).toBe(true);
  });

  it("registration with another challenge, origin or relying party is refused", async () => {
    const options = await registrationOptions();
    const response = SoftwareAuthenticator.create().register(options, origin);
    const base = { response, expectedChallenge: options.challenge, expectedOrigin: origin, expectedRPID: rpID };
    await expect(verifyRegistrationResponse({ ...base, expectedChallenge: "another-challenge" })).rejects.toThrow(
      /challenge/,
    );
    await expect(verifyRegistrationResponse({ ...base, expectedOrigin: "https://evil.example" })).rejects.toThrow(
      /origin/,
    );
    await expect(verifyRegistrationResponse({ ...base, expectedRPID: "evil.example" })).rejects.toThrow(/RP ID/);
  });

  it("asserts: the signature verifies and the counter goes up by one each time", async () => {
    for (const expected of [1, 2]) {
      const options = await generateAuthenticationOptions({
        rpID,
        allowCredentials: [{ id: authenticator.credentialId }],
        userVerification: "required",
      });
      const verified = await verifyAuthenticationResponse({
        response: authenticator.assert(options, origin),
        expectedChallenge: options.challenge,
        expectedOrigin: origin,
        expectedRPID: rpID,
        credential,
      });
      expect(verified).toMatchObject({
        verified: true,
        authenticationInfo: { newCounter: expected, userVerified: true, credentialID: authenticator.credentialId },
      });
      credential = { ...credential, counter: verified.authenticationInfo.newCounter };
    }
  });

  describe("tampered or wrong assertions are refused", () => {
    const attempt = async (
      change: (response: AuthenticationResponseJSON) => AuthenticationResponseJSON,
      overrides: { userVerified?: boolean; counter?: number } = {},
    ) => {
      const options = await generateAuthenticationOptions({ rpID, userVerification: "required" });
      const response = change(authenticator.assert(options, origin, { userVerified: overrides.userVerified }));
      return verifyAuthenticationResponse({
        response,
        expectedChallenge: options.challenge,
        expectedOrigin: origin,
        expectedRPID: rpID,
        credential: { ...credential, counter: overrides.counter ?? 0 },
      });
    };
    const unchanged = (response: AuthenticationResponseJSON) => response;

    it("an untouched one passes (the baseline of the cases below)", async () => {
      expect((await attempt(unchanged)).verified).toBe(true);
    });
    it("a flipped signature bit", async () => {
      const verified = await attempt((r) =>
        tamper(r, "signature", (b) => {
          b.writeUInt8(b.readUInt8(b.length - 1) ^ 1, b.length - 1);
          return b;
        }),
      );
      expect(verified.verified).toBe(false);
    });
    it("another challenge in the client data", async () => {
      await expect(
        attempt((r) => editClientData(r, (d) => (d.challenge = Buffer.from("other").toString("base64url")))),
      ).rejects.toThrow(/challenge/);
    });
    it("another origin in the client data", async () => {
      await expect(attempt((r) => editClientData(r, (d) => (d.origin = "https://evil.example")))).rejects.toThrow(
        /origin/,
      );
    });
    it("a registration type in the client data", async () => {
      await expect(attempt((r) => editClientData(r, (d) => (d.type = "webauthn.create")))).rejects.toThrow(/type/);
    });
    it("a raised counter in the signed authenticator data", async () => {
      const verified = await attempt((r) =>
        tamper(r, "authenticatorData", (b) => {
          b.writeUInt32BE(b.readUInt32BE(33) + 100, 33);
          return b;
        }),
      );
      expect(verified.verified).toBe(false);
    });
    it("no user verification", async () => {
      await expect(attempt(unchanged, { userVerified: false })).rejects.toThrow(/User verification required/);
    });
    it("a counter not above the stored one (a replayed or cloned authenticator)", async () => {
      await expect(attempt(unchanged, { counter: authenticator.signCount + 5 })).rejects.toThrow(/counter/);
    });
  });

  it("an assertion made for another relying party is refused", async () => {
    const options = await generateAuthenticationOptions({ rpID: "evil.example", userVerification: "required" });
    const response = authenticator.assert(options, origin);
    await expect(
      verifyAuthenticationResponse({
        response,
        expectedChallenge: options.challenge,
        expectedOrigin: origin,
        expectedRPID: rpID,
        credential,
      }),
    ).rejects.toThrow(/RP ID/);
  });

  it("refuses options it cannot answer", async () => {
    const options = await generateRegistrationOptions({
      rpName: "svc",
      rpID,
      userName: "x",
      supportedAlgorithmIDs: [-257],
    });
    expect(() => SoftwareAuthenticator.create().register(options, origin)).toThrow(AuthenticatorRefusal);
    const others = await generateAuthenticationOptions({
      rpID,
      allowCredentials: [{ id: SoftwareAuthenticator.create().credentialId }],
    });
    expect(() => authenticator.assert(others, origin)).toThrow(AuthenticatorRefusal);
  });

  it("a restored authenticator carries on with the same key, counter and user handle", async () => {
    const restored = SoftwareAuthenticator.restore(authenticator.export());
    const options = await generateAuthenticationOptions({ rpID, userVerification: "required" });
    const response = restored.assert(options, origin);
    expect(response.response.userHandle).toBe(Buffer.from("a-human").toString("base64url"));
    const verified = await verifyAuthenticationResponse({
      response,
      expectedChallenge: options.challenge,
      expectedOrigin: origin,
      expectedRPID: rpID,
      credential: { ...credential, counter: authenticator.signCount },
    });
    expect(verified.authenticationInfo.newCounter).toBe(authenticator.signCount + 1);
  });
});
