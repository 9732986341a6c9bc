import { timestampDate } from "@bufbuild/protobuf/wkt";
import { Code } from "@connectrpc/connect";
import { createLogger, deleteDue, ManualClock, openDatabase, uuid } from "@svc/platform";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SoftwareAuthenticator } from "../../../test/harness/software-passkey.ts";
import { migrations } from "../src/migrations/index.ts";
import { ceremonyRetentionRule } from "../src/passkeys/ceremonies.ts";
import { PasskeyCeremony } from "../src/passkeys/passkey.entity.ts";
import { refusal, startTestAccount, type TestAccount } from "./support/account.ts";

const rpId = "verify.example";
const origin = "https://verify.example";
const clock = new ManualClock("2026-11-22T10:00:00Z");
let account: TestAccount;

beforeAll(async () => {
  account = await startTestAccount("account_passkeys", { clock });
});
afterAll(() => account?.stop());

/** A signed-in human (first sight creates it). */
async function signedInHuman(): Promise<string> {
  return (await account.client.resolveSignedInHuman({ issuer: "https://id.example", subject: uuid() })).svcUserId;
}

/** Registers a new software passkey for the human (or, without one, in private mode). */
async function registerPasskey(svcUserId = "", authenticator = SoftwareAuthenticator.create()) {
  const begun = await account.client.beginPasskeyRegistration({ svcUserId, rpId, origin });
  const finished = await account.client.finishPasskeyRegistration({
    ceremonyId: begun.ceremonyId,
    responseJson: JSON.stringify(authenticator.register(JSON.parse(begun.optionsJson), origin)),
  });
  return { authenticator, ...finished };
}

const beginAssertion = (svcUserId: string, binding: string) =>
  account.client.beginPasskeyAssertion({ svcUserId, rpId, origin, binding });
const answer = (authenticator: SoftwareAuthenticator, optionsJson: string) =>
  JSON.stringify(authenticator.assert(JSON.parse(optionsJson), origin));

describe("signed-in humans", () => {
  it("are created at first sight and found again afterwards", async () => {
    const identity = { issuer: "https://id.example", subject: uuid() };
    const first = await account.client.resolveSignedInHuman(identity);
    expect(first.created).toBe(true);
    expect(first.svcUserId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(await account.client.resolveSignedInHuman(identity)).toMatchObject({
      svcUserId: first.svcUserId,
      created: false,
    });
    const human = await account.client.getHuman({ svcUserId: first.svcUserId });
    expect(human).toMatchObject({ svcUserId: first.svcUserId, passkeyCount: 0, deviceCount: 0 });
    expect(timestampDate(human.createdAt!)).toEqual(clock.now());
  });

  it("concurrent first sign-ins of one identity create one human", async () => {
    const identity = { issuer: "https://id.example", subject: uuid() };
    const results = await Promise.all(Array.from({ length: 8 }, () => account.client.resolveSignedInHuman(identity)));
    expect(new Set(results.map((r) => r.svcUserId)).size).toBe(1);
    expect(results.filter((r) => r.created)).toHaveLength(1);
    const [row] = await account.sql<{ humans: string }>(
      `select count(*) as humans from human h where not exists (select 1 from sign_in_identity i where i.svc_user_id = h.id) and not exists (select 1 from passkey p where p.svc_user_id = h.id)`,
    );
    expect(row!.humans).toBe("0");
  });

  it("an unknown human is NotFound and a malformed id InvalidArgument", async () => {
    expect((await refusal(account.client.getHuman({ svcUserId: uuid() }))).code).toBe(Code.NotFound);
    const malformed = await refusal(account.client.getHuman({ svcUserId: "not-a-uuid" }));
    expect([malformed.code, malformed.rawMessage]).toEqual([
      Code.InvalidArgument,
      'svc_user_id is not a uuid: "not-a-uuid"',
    ]);
    expect((await refusal(account.client.resolveSignedInHuman({ issuer: "", subject: "x" }))).code).toBe(
      Code.InvalidArgument,
    );
  });
});

describe("passkey registration and assertion", () => {
  it("a registered passkey confirms what its assertion was bound to", async () => {
    const svcUserId = await signedInHuman();
    const { authenticator, credentialId, svcUserId: registeredFor } = await registerPasskey(svcUserId);
    expect([registeredFor, credentialId]).toEqual([svcUserId, authenticator.credentialId]);
    expect((await account.client.getHuman({ svcUserId })).passkeyCount).toBe(1);

    const begun = await beginAssertion(svcUserId, "gate-request:req_1");
    expect(timestampDate(begun.expiresAt!)).toEqual(new Date(clock.now().getTime() + 5 * 60_000));
    const options = JSON.parse(begun.optionsJson);
    expect(options).toMatchObject({
      rpId,
      userVerification: "required",
      allowCredentials: [{ id: credentialId, type: "public-key", transports: ["internal"] }],
    });
    const finished = await account.client.finishPasskeyAssertion({
      ceremonyId: begun.ceremonyId,
      responseJson: answer(authenticator, begun.optionsJson),
      binding: "gate-request:req_1",
    });
    expect(finished).toMatchObject({ svcUserId, credentialId, userVerified: true });

    const [stored] = await account.sql<{ sign_count: string; public_key: Buffer }>(
      "select sign_count, public_key from passkey where credential_id = $1",
      [credentialId],
    );
    expect(stored!.sign_count).toBe("1");
    expect(stored!.public_key.equals(authenticator.publicKeyCose())).toBe(true);
  });

  it("private mode: the registration creates a human with nothing but the passkey, and a discoverable assertion finds it", async () => {
    const { authenticator, svcUserId } = await registerPasskey();
    expect(await account.client.getHuman({ svcUserId })).toMatchObject({ svcUserId, passkeyCount: 1, deviceCount: 0 });
    expect(await account.sql("select 1 from sign_in_identity where svc_user_id = $1", [svcUserId])).toEqual([]);

    const begun = await beginAssertion("", "gate-request:req_private");
    expect(JSON.parse(begun.optionsJson).allowCredentials).toEqual([]);
    const finished = await account.client.finishPasskeyAssertion({
      ceremonyId: begun.ceremonyId,
      responseJson: answer(authenticator, begun.optionsJson),
      binding: "gate-request:req_private",
    });
    expect(finished).toMatchObject({ svcUserId, credentialId: authenticator.credentialId, userVerified: true });
  });

  it("a caller's own challenge is what the passkey signs; a malformed one creates no ceremony", async () => {
    const svcUserId = await signedInHuman();
    const { authenticator } = await registerPasskey(svcUserId);
    const challenge = Buffer.alloc(32, 7).toString("base64url");
    const begun = await account.client.beginPasskeyAssertion({
      svcUserId,
      rpId,
      origin,
      binding: "agents-ask-confirm:x",
      challenge,
    });
    expect(JSON.parse(begun.optionsJson).challenge).toBe(challenge);
    const response = JSON.parse(answer(authenticator, begun.optionsJson));
    const clientData = JSON.parse(Buffer.from(response.response.clientDataJSON, "base64url").toString("utf8"));
    expect(clientData.challenge).toBe(challenge);
    await account.client.finishPasskeyAssertion({
      ceremonyId: begun.ceremonyId,
      responseJson: JSON.stringify(response),
      binding: "agents-ask-confirm:x",
    });

    const before = await account.sql("select id from passkey_ceremony");
    for (const bad of [
      "short",
      Buffer.alloc(65).toString("base64url"),
      `${challenge}=`,
      challenge.replace(/.$/, "+"),
    ]) {
      const refused = await refusal(
        account.client.beginPasskeyAssertion({ svcUserId, rpId, origin, binding: "b", challenge: bad }),
      );
      expect([refused.code, refused.rawMessage]).toEqual([
        Code.InvalidArgument,
        "challenge must be the base64url form of 32 to 64 bytes",
      ]);
    }
    expect(await account.sql("select id from passkey_ceremony")).toEqual(before);
  });

  it("an assertion begun for one binding never finishes for another, and still finishes for its own", async () => {
    const svcUserId = await signedInHuman();
    const { authenticator } = await registerPasskey(svcUserId);
    const begun = await beginAssertion(svcUserId, "gate-request:req_A");
    const responseJson = answer(authenticator, begun.optionsJson);
    const refused = await refusal(
      account.client.finishPasskeyAssertion({
        ceremonyId: begun.ceremonyId,
        responseJson,
        binding: "gate-request:req_B",
      }),
    );
    expect([refused.code, refused.rawMessage]).toEqual([
      Code.PermissionDenied,
      `assertion ceremony ${begun.ceremonyId} was begun for another binding than "gate-request:req_B"`,
    ]);
    expect(
      (
        await account.client.finishPasskeyAssertion({
          ceremonyId: begun.ceremonyId,
          responseJson,
          binding: "gate-request:req_A",
        })
      ).svcUserId,
    ).toBe(svcUserId);
  });

  it("a challenge is used once: the same response again is refused", async () => {
    const svcUserId = await signedInHuman();
    const { authenticator } = await registerPasskey(svcUserId);
    const begun = await beginAssertion(svcUserId, "gate-request:req_twice");
    const request = {
      ceremonyId: begun.ceremonyId,
      responseJson: answer(authenticator, begun.optionsJson),
      binding: "gate-request:req_twice",
    };
    await account.client.finishPasskeyAssertion(request);
    const again = await refusal(account.client.finishPasskeyAssertion(request));
    expect([again.code, again.rawMessage]).toEqual([
      Code.FailedPrecondition,
      `assertion ceremony ${begun.ceremonyId} was already used`,
    ]);
  });

  it("concurrent finishes of one ceremony: exactly one is accepted", async () => {
    const svcUserId = await signedInHuman();
    const { authenticator } = await registerPasskey(svcUserId);
    const begun = await beginAssertion(svcUserId, "gate-request:req_race");
    const request = {
      ceremonyId: begun.ceremonyId,
      responseJson: answer(authenticator, begun.optionsJson),
      binding: "gate-request:req_race",
    };
    const results = await Promise.allSettled(
      Array.from({ length: 5 }, () => account.client.finishPasskeyAssertion(request)),
    );
    expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(1);
  });

  it("an expired challenge is refused, registration and assertion alike", async () => {
    const svcUserId = await signedInHuman();
    const { authenticator } = await registerPasskey(svcUserId);
    const assertion = await beginAssertion(svcUserId, "gate-request:req_late");
    const registration = await account.client.beginPasskeyRegistration({ svcUserId: "", rpId, origin });
    clock.advance(5 * 60_000);
    const late = await refusal(
      account.client.finishPasskeyAssertion({
        ceremonyId: assertion.ceremonyId,
        responseJson: answer(authenticator, assertion.optionsJson),
        binding: "gate-request:req_late",
      }),
    );
    expect([late.code, late.rawMessage]).toEqual([
      Code.FailedPrecondition,
      `assertion ceremony ${assertion.ceremonyId} expired at ${timestampDate(assertion.expiresAt!).toISOString()}`,
    ]);
    const lateRegistration = await refusal(
      account.client.finishPasskeyRegistration({
        ceremonyId: registration.ceremonyId,
        responseJson: JSON.stringify(
          SoftwareAuthenticator.create().register(JSON.parse(registration.optionsJson), origin),
        ),
      }),
    );
    expect(lateRegistration.code).toBe(Code.FailedPrecondition);
  });

  it("a replayed signature counter (a cloned authenticator) is refused", async () => {
    const svcUserId = await signedInHuman();
    const { authenticator } = await registerPasskey(svcUserId);
    const clone = SoftwareAuthenticator.restore(authenticator.export());
    const first = await beginAssertion(svcUserId, "gate-request:req_c1");
    await account.client.finishPasskeyAssertion({
      ceremonyId: first.ceremonyId,
      responseJson: answer(authenticator, first.optionsJson),
      binding: "gate-request:req_c1",
    });
    const second = await beginAssertion(svcUserId, "gate-request:req_c2");
    const refused = await refusal(
      account.client.finishPasskeyAssertion({
        ceremonyId: second.ceremonyId,
        responseJson: answer(clone, second.optionsJson),
        binding: "gate-request:req_c2",
      }),
    );
    expect(refused.code).toBe(Code.PermissionDenied);
    expect(refused.rawMessage).toMatch(
      /^passkey assertion refused: Response counter value 1 was lower than expected 1/,
    );
  });

  it("a failed verification is PermissionDenied and uses the ceremony up", async () => {
    const svcUserId = await signedInHuman();
    const { authenticator } = await registerPasskey(svcUserId);
    const begun = await beginAssertion(svcUserId, "gate-request:req_bad");
    const wrongOrigin = JSON.stringify(authenticator.assert(JSON.parse(begun.optionsJson), "https://evil.example"));
    const refused = await refusal(
      account.client.finishPasskeyAssertion({
        ceremonyId: begun.ceremonyId,
        responseJson: wrongOrigin,
        binding: "gate-request:req_bad",
      }),
    );
    expect([refused.code, refused.rawMessage]).toEqual([
      Code.PermissionDenied,
      'passkey assertion refused: Unexpected authentication response origin "https://evil.example", expected "https://verify.example"',
    ]);
    const retry = await refusal(
      account.client.finishPasskeyAssertion({
        ceremonyId: begun.ceremonyId,
        responseJson: answer(authenticator, begun.optionsJson),
        binding: "gate-request:req_bad",
      }),
    );
    expect(retry.code).toBe(Code.FailedPrecondition);
  });

  it("without user verification the assertion is refused", async () => {
    const svcUserId = await signedInHuman();
    const { authenticator } = await registerPasskey(svcUserId);
    const begun = await beginAssertion(svcUserId, "gate-request:req_uv");
    const responseJson = JSON.stringify(
      authenticator.assert(JSON.parse(begun.optionsJson), origin, { userVerified: false }),
    );
    const refused = await refusal(
      account.client.finishPasskeyAssertion({
        ceremonyId: begun.ceremonyId,
        responseJson,
        binding: "gate-request:req_uv",
      }),
    );
    expect([refused.code, refused.rawMessage]).toEqual([
      Code.PermissionDenied,
      "passkey assertion refused: User verification required, but user could not be verified",
    ]);
  });

  it("a caller that judges user verification itself gets the signed assertion without it, user_verified false", async () => {
    const svcUserId = await signedInHuman();
    const { authenticator } = await registerPasskey(svcUserId);
    const unverified = await beginAssertion(svcUserId, "gate-request:req_judged");
    const answered = await account.client.finishPasskeyAssertion({
      ceremonyId: unverified.ceremonyId,
      responseJson: JSON.stringify(
        authenticator.assert(JSON.parse(unverified.optionsJson), origin, { userVerified: false }),
      ),
      binding: "gate-request:req_judged",
      acceptWithoutUserVerification: true,
    });
    expect([answered.svcUserId, answered.userVerified]).toEqual([svcUserId, false]);

    // The opt-in does not loosen the signature check, and a verified assertion still reads verified.
    const forged = await beginAssertion(svcUserId, "gate-request:req_judged");
    const signed = authenticator.assert(JSON.parse(forged.optionsJson), origin, { userVerified: false });
    const refused = await refusal(
      account.client.finishPasskeyAssertion({
        ceremonyId: forged.ceremonyId,
        responseJson: JSON.stringify({ ...signed, response: { ...signed.response, signature: "AAAA" } }),
        binding: "gate-request:req_judged",
        acceptWithoutUserVerification: true,
      }),
    );
    expect(refused.code).toBe(Code.PermissionDenied);
    const verified = await beginAssertion(svcUserId, "gate-request:req_judged");
    const passed = await account.client.finishPasskeyAssertion({
      ceremonyId: verified.ceremonyId,
      responseJson: answer(authenticator, verified.optionsJson),
      binding: "gate-request:req_judged",
      acceptWithoutUserVerification: true,
    });
    expect(passed.userVerified).toBe(true);
  });

  it("another human's passkey cannot answer a ceremony that names a human", async () => {
    const alice = await signedInHuman();
    const bob = await signedInHuman();
    await registerPasskey(alice);
    const { authenticator: bobs } = await registerPasskey(bob);
    const begun = await beginAssertion(alice, "gate-request:req_other");
    const forged = JSON.stringify(bobs.assert({ ...JSON.parse(begun.optionsJson), allowCredentials: [] }, origin));
    const refused = await refusal(
      account.client.finishPasskeyAssertion({
        ceremonyId: begun.ceremonyId,
        responseJson: forged,
        binding: "gate-request:req_other",
      }),
    );
    expect([refused.code, refused.rawMessage]).toEqual([
      Code.PermissionDenied,
      "passkey assertion refused: the passkey belongs to another human than the ceremony names",
    ]);
  });

  it("a credential id is registered once", async () => {
    const { authenticator } = await registerPasskey();
    const refused = await refusal(registerPasskey(await signedInHuman(), authenticator));
    expect([refused.code, refused.rawMessage]).toEqual([
      Code.AlreadyExists,
      `a passkey with credential id ${authenticator.credentialId} is already registered`,
    ]);
  });

  it("refuses what is not a ceremony or not a response without using anything up", async () => {
    const svcUserId = await signedInHuman();
    const { authenticator } = await registerPasskey(svcUserId);
    expect(
      (await refusal(account.client.finishPasskeyAssertion({ ceremonyId: uuid(), responseJson: "{}", binding: "b" })))
        .code,
    ).toBe(Code.InvalidArgument);
    const unknown = await refusal(
      account.client.finishPasskeyAssertion({
        ceremonyId: "3f0c2f4e-0000-4000-8000-000000000000",
        responseJson: answer(authenticator, JSON.stringify({ challenge: "x", rpId })),
        binding: "b",
      }),
    );
    expect([unknown.code, unknown.rawMessage]).toEqual([
      Code.FailedPrecondition,
      "no assertion ceremony 3f0c2f4e-0000-4000-8000-000000000000",
    ]);

    const begun = await beginAssertion(svcUserId, "gate-request:req_input");
    const notJson = await refusal(
      account.client.finishPasskeyAssertion({
        ceremonyId: begun.ceremonyId,
        responseJson: "{not json",
        binding: "gate-request:req_input",
      }),
    );
    expect([notJson.code, notJson.rawMessage]).toEqual([Code.InvalidArgument, "response_json is not JSON"]);
    expect(
      (
        await account.client.finishPasskeyAssertion({
          ceremonyId: begun.ceremonyId,
          responseJson: answer(authenticator, begun.optionsJson),
          binding: "gate-request:req_input",
        })
      ).svcUserId,
    ).toBe(svcUserId);

    expect((await refusal(account.client.beginPasskeyAssertion({ svcUserId, rpId, origin, binding: "" }))).code).toBe(
      Code.InvalidArgument,
    );
    const outside = await refusal(
      account.client.beginPasskeyAssertion({ svcUserId, rpId, origin: "https://evil.example", binding: "b" }),
    );
    expect([outside.code, outside.rawMessage]).toEqual([
      Code.InvalidArgument,
      "origin https://evil.example is not within rp_id verify.example",
    ]);
    expect(
      (await refusal(account.client.beginPasskeyAssertion({ svcUserId: uuid(), rpId, origin, binding: "b" }))).code,
    ).toBe(Code.NotFound);
    const none = await refusal(
      account.client.beginPasskeyAssertion({ svcUserId: await signedInHuman(), rpId, origin, binding: "b" }),
    );
    expect(none.code).toBe(Code.FailedPrecondition);
  });
});

describe("ceremony upkeep", () => {
  /** ACCOUNT_CEREMONY_RETENTION's default. */
  const ceremonyRetentionMs = 60 * 60_000;

  it("ceremonies that expired over an hour ago are deleted; later ones still explain themselves", async () => {
    const orm = await openDatabase({
      url: account.database.url,
      schema: "account",
      entities: [PasskeyCeremony],
      migrations,
      logger: createLogger("sweep-test", {}, "error"),
    });
    try {
      const svcUserId = await signedInHuman();
      const { authenticator } = await registerPasskey(svcUserId);
      const old = await beginAssertion(svcUserId, "gate-request:req_old");
      clock.advance(5 * 60_000 + ceremonyRetentionMs);
      const recent = await beginAssertion(svcUserId, "gate-request:req_recent");
      await account.client.finishPasskeyAssertion({
        ceremonyId: recent.ceremonyId,
        responseJson: answer(authenticator, recent.optionsJson),
        binding: "gate-request:req_recent",
      });
      clock.advance(1000);
      expect(await deleteDue(orm, ceremonyRetentionRule(clock.now(), ceremonyRetentionMs), 1000)).toBeGreaterThan(0);
      const gone = await refusal(
        account.client.finishPasskeyAssertion({
          ceremonyId: old.ceremonyId,
          responseJson: answer(authenticator, old.optionsJson),
          binding: "gate-request:req_old",
        }),
      );
      expect(gone.rawMessage).toBe(`no assertion ceremony ${old.ceremonyId}`);
      const used = await refusal(
        account.client.finishPasskeyAssertion({
          ceremonyId: recent.ceremonyId,
          responseJson: answer(authenticator, recent.optionsJson),
          binding: "gate-request:req_recent",
        }),
      );
      expect(used.rawMessage).toBe(`assertion ceremony ${recent.ceremonyId} was already used`);
    } finally {
      await orm.close();
    }
  });
});
