import { ManualClock } from "@svc/platform";
import { SandboxBehavior } from "@svc/proto/account/v1/account_pb.js";
import { Environment } from "@svc/proto/common/v1/caller_pb.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestAccount, type TestAccount } from "./support/account.ts";

const clock = new ManualClock("2026-11-22T10:00:00Z");
let account: TestAccount;

beforeAll(async () => {
  account = await startTestAccount("account_age_wallet", { clock });
});
afterAll(() => account?.stop());

describe("wallet presentations", () => {
  it("start ahead of time with the EU PID thresholds", async () => {
    const human = await account.console.createSandboxHuman({
      environment: Environment.DEVELOPMENT,
      behavior: SandboxBehavior.CONFIRM,
    });
    const started = await account.client.startAgePresentation({
      svcUserId: human.svcUserId,
      clientId: "https://verify.example",
    });
    expect(started.requestUri).toMatch(/^https:\/\/verify\.example\/wallet\/requests\/apr_/);
  });
});
