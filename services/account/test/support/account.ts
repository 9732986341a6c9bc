import type { Client } from "@connectrpc/connect";
import { type Clock, createInternalClient, createLogger } from "@svc/platform";
import { AccountConsoleService, AccountService } from "@svc/proto/account/v1/account_pb.js";
import { type ServiceUnderTest, startServiceUnderTest } from "../../../../test/harness/service-under-test.ts";
import { startAccount } from "../../src/server.ts";

export { refusal } from "../../../../test/harness/service-under-test.ts";

export interface TestAccount extends ServiceUnderTest {
  client: Client<typeof AccountService>;
  console: Client<typeof AccountConsoleService>;
}

const sandboxKey = Buffer.alloc(32, 7).toString("base64");
export const refPepper = Buffer.alloc(32, 9).toString("base64");

/** The account service in this process on its own database, stream and subjects, with the given clock. */
export async function startTestAccount(
  label: string,
  options: { clock: Clock; env?: Record<string, string> },
): Promise<TestAccount> {
  const running = await startServiceUnderTest(label, {
    schema: "account",
    env: {
      ACCOUNT_PORT: "0",
      ACCOUNT_SANDBOX_KEY: sandboxKey,
      ACCOUNT_REF_PEPPER: refPepper,
      // Tests delete what is due themselves and count it: the timed retention must not take those rows first.
      ACCOUNT_RETENTION_EVERY: "1h",
      ...options.env,
    },
    start: (env) => startAccount({ env, clock: options.clock, logger: createLogger("account", {}, "error") }),
  });
  return {
    ...running,
    client: createInternalClient(AccountService, running.service.url),
    console: createInternalClient(AccountConsoleService, running.service.url),
  };
}
