import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code } from "@connectrpc/connect";
import { ManualClock, uuid } from "@svc/platform";
import { AgeVerdict, SandboxBehavior } from "@svc/proto/account/v1/account_pb.js";
import { Environment } from "@svc/proto/common/v1/caller_pb.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SoftwareAuthenticator } from "../../../test/harness/software-passkey.ts";
import { runSvcctl } from "../../../test/harness/svcctl.ts";
import { refusal, startTestAccount, type TestAccount } from "./support/account.ts";

const rpId = "verify.example";
const origin = "https://verify.example";
const clock = new ManualClock("2026-11-22T10:00:00Z");
let account: TestAccount;

beforeAll(async () => {
  account = await startTestAccount("account_sandbox", { clock });
});
afterAll(() => account?.stop());

const createSandboxHuman = (behavior = SandboxBehavior.CONFIRM, age?: number) =>
  account.console.createSandboxHuman({
    environment: Environment.DEVELOPMENT,
    behavior,
    ...(age !== undefined && { age }),
  });

describe("sandbox humans", () => {
  it("are created in development with a passkey, one device, a behavior and a sign-in identity", async () => {
    const created = await createSandboxHuman(SandboxBehavior.DECLINE);
    expect(created.issuer).toBe("http://127.0.0.1:8070");
    expect(created.subject).toMatch(/^[0-9a-f-]{36}$/);
    expect(await account.client.getHuman({ svcUserId: created.svcUserId })).toMatchObject({
      svcUserId: created.svcUserId,
      passkeyCount: 1,
      deviceCount: 1,
      sandboxBehavior: SandboxBehavior.DECLINE,
      sandboxEnvironment: Environment.DEVELOPMENT,
    });
    const { devices } = await account.client.listDevices({ svcUserId: created.svcUserId });
    expect(devices.map((d) => d.platform)).toEqual(["sandbox"]);
    // The development identity provider's session resolves to this human.
    expect(
      await account.client.resolveSignedInHuman({ issuer: created.issuer, subject: created.subject }),
    ).toMatchObject({ svcUserId: created.svcUserId, created: false });
  });

  it("are refused in production (FailedPrecondition) and need an environment and a behavior", async () => {
    const production = await refusal(
      account.console.createSandboxHuman({ environment: Environment.PRODUCTION, behavior: SandboxBehavior.CONFIRM }),
    );
    expect([production.code, production.rawMessage]).toEqual([
      Code.FailedPrecondition,
      "sandbox humans exist only in the development environment; production never has them",
    ]);
    expect((await refusal(account.console.createSandboxHuman({ behavior: SandboxBehavior.CONFIRM }))).code).toBe(
      Code.InvalidArgument,
    );
    expect((await refusal(account.console.createSandboxHuman({ environment: Environment.DEVELOPMENT }))).code).toBe(
      Code.InvalidArgument,
    );
    expect((await refusal(createSandboxHuman(SandboxBehavior.CONFIRM, 151))).code).toBe(Code.InvalidArgument);
  });

  it("with an age carry sandbox age evidence; without one their age is unavailable", async () => {
    const at = clock.now();
    const thirty = await createSandboxHuman(SandboxBehavior.CONFIRM, 30);
    expect(
      await account.client.evaluateAge({ svcUserId: thirty.svcUserId, threshold: 30, at: timestampFromDate(at) }),
    ).toMatchObject({
      verdict: AgeVerdict.OVER,
      source: "sandbox",
    });
    expect(
      (await account.client.evaluateAge({ svcUserId: thirty.svcUserId, threshold: 31, at: timestampFromDate(at) }))
        .verdict,
    ).toBe(AgeVerdict.UNDER);
    const ageless = await createSandboxHuman();
    expect(
      await account.client.evaluateAge({ svcUserId: ageless.svcUserId, threshold: 18, at: timestampFromDate(at) }),
    ).toMatchObject({
      verdict: AgeVerdict.UNAVAILABLE,
      source: "",
    });
  });

  it("SandboxAssert answers assertion options, and FinishPasskeyAssertion accepts it like a real passkey's", async () => {
    const { svcUserId } = await createSandboxHuman();
    for (const request of ["req_s1", "req_s2"]) {
      const binding = `gate-request:${request}`;
      const begun = await account.client.beginPasskeyAssertion({ svcUserId, rpId, origin, binding });
      const { responseJson } = await account.client.sandboxAssert({
        svcUserId,
        optionsJson: begun.optionsJson,
        origin,
      });
      expect(
        await account.client.finishPasskeyAssertion({ ceremonyId: begun.ceremonyId, responseJson, binding }),
      ).toMatchObject({ svcUserId, userVerified: true });
    }
    const [stored] = await account.sql<{ sign_count: string }>(
      "select p.sign_count from passkey p where p.svc_user_id = $1",
      [svcUserId],
    );
    expect(stored!.sign_count).toBe("2");
  });

  it("a sandbox assertion is still bound to its ceremony: another binding is refused", async () => {
    const { svcUserId } = await createSandboxHuman();
    const begun = await account.client.beginPasskeyAssertion({
      svcUserId,
      rpId,
      origin,
      binding: "gate-request:req_mine",
    });
    const { responseJson } = await account.client.sandboxAssert({ svcUserId, optionsJson: begun.optionsJson, origin });
    expect(
      (
        await refusal(
          account.client.finishPasskeyAssertion({
            ceremonyId: begun.ceremonyId,
            responseJson,
            binding: "gate-request:req_other",
          }),
        )
      ).code,
    ).toBe(Code.PermissionDenied);
  });

  it("SandboxAssert refuses a real human (PermissionDenied), an unknown one and options that allow other passkeys", async () => {
    const { svcUserId } = await account.client.resolveSignedInHuman({ issuer: "https://id.example", subject: uuid() });
    const options = JSON.stringify({ challenge: "Y2hhbGxlbmdl", rpId });
    const real = await refusal(account.client.sandboxAssert({ svcUserId, optionsJson: options, origin }));
    expect([real.code, real.rawMessage]).toEqual([
      Code.PermissionDenied,
      `human ${svcUserId} is not a sandbox human: only a real person signs for it`,
    ]);
    expect(
      (await refusal(account.client.sandboxAssert({ svcUserId: uuid(), optionsJson: options, origin }))).code,
    ).toBe(Code.NotFound);
    const sandbox = await createSandboxHuman();
    const others = JSON.stringify({
      challenge: "Y2hhbGxlbmdl",
      rpId,
      allowCredentials: [{ id: SoftwareAuthenticator.create().credentialId, type: "public-key" }],
    });
    expect(
      (await refusal(account.client.sandboxAssert({ svcUserId: sandbox.svcUserId, optionsJson: others, origin }))).code,
    ).toBe(Code.FailedPrecondition);
    expect(
      (await refusal(account.client.sandboxAssert({ svcUserId: sandbox.svcUserId, optionsJson: "[]", origin }))).code,
    ).toBe(Code.InvalidArgument);
  });

  it("keeps the software passkey's private key only sealed", async () => {
    const { svcUserId } = await createSandboxHuman();
    const [row] = await account.sql<{ sealed_private_key: Buffer }>(
      "select s.sealed_private_key from sandbox_passkey s join passkey p using (credential_id) where p.svc_user_id = $1",
      [svcUserId],
    );
    // A PKCS#8 P-256 key starts with this DER prefix; sealed, it must not show.
    expect(row!.sealed_private_key.includes(Buffer.from("308187020100301306072a8648ce3d0201", "hex"))).toBe(false);
  });
});

describe("svcctl human create", () => {
  /**
   * The installed svcctl as an operator runs it, a child process, pointed at the account service itself,
   * which serves its console service as the gateway's console forwards it.
   */
  const run = (args: string[]) => runSvcctl(account.service.url, args);

  it("prints the new human's id and sign-in identity", async () => {
    const result = await run(["human", "create", "--env", "development", "--behavior", "silent", "--age", "21"]);
    expect([result.code, result.stderr]).toEqual([0, ""]);
    const printed = JSON.parse(result.stdout);
    expect(Object.keys(printed)).toEqual(["svc_user_id", "issuer", "subject"]);
    expect((await account.client.getHuman({ svcUserId: printed.svc_user_id })).sandboxBehavior).toBe(
      SandboxBehavior.SILENT,
    );
  });

  it("defaults to a human that confirms", async () => {
    const printed = JSON.parse((await run(["human", "create", "--env", "development"])).stdout);
    expect((await account.client.getHuman({ svcUserId: printed.svc_user_id })).sandboxBehavior).toBe(
      SandboxBehavior.CONFIRM,
    );
  });

  it("reports production's refusal, bad options and help", async () => {
    expect(await run(["human", "create", "--env", "production"])).toEqual({
      code: 1,
      stdout: "",
      stderr:
        "svcctl: FailedPrecondition: sandbox humans exist only in the development environment; production never has them\n",
    });
    expect((await run(["human", "create", "--env", "development", "--age", "old"])).code).toBe(2);
    expect((await run(["human", "create", "--env", "development", "--behavior", "maybe"])).code).toBe(2);
    const help = await run(["human", "create", "--help"]);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain(
      "Usage: svcctl human create --env development|production [--behavior confirm|decline|silent] [--age N]",
    );
    expect((await run(["human", "--help"])).stdout).toContain("Sandbox humans");
  });
});
