import { toJson } from "@bufbuild/protobuf";
import { StructSchema } from "@bufbuild/protobuf/wkt";
import type { Client, ConnectError } from "@connectrpc/connect";
import { type Clock, createInternalClient, createLogger } from "@svc/platform";
import { AgentCallbackService, AgentConsoleService, AgentService } from "@svc/proto/agentlink/v1/agentlink_pb.js";
import { type ServiceUnderTest, startServiceUnderTest } from "../../../../test/harness/service-under-test.ts";
import { startAgentlink } from "../../src/server.ts";

export { refusal } from "../../../../test/harness/service-under-test.ts";

/** A refusal's `data.error` fields beside its message, as agentlink sends them (Struct error details). */
export const detailOf = (error: ConnectError) =>
  Object.assign({}, ...error.findDetails(StructSchema).map((struct) => toJson(StructSchema, struct)));

export interface TestAgentlink extends ServiceUnderTest {
  client: Client<typeof AgentService>;
  console: Client<typeof AgentConsoleService>;
  callbacks: Client<typeof AgentCallbackService>;
}

export const keyPepper = Buffer.alloc(32, 3);
export const opaqueIdKey = Buffer.alloc(32, 5);
export const callbackSecretKey = Buffer.alloc(32, 6);

/** The agentlink service in this process on its own database, stream and subjects, with the given clock. */
export async function startTestAgentlink(
  label: string,
  options: { clock: Clock; env?: Record<string, string> },
): Promise<TestAgentlink> {
  const running = await startServiceUnderTest(label, {
    schema: "agentlink",
    env: {
      AGENTLINK_PORT: "0",
      AGENTLINK_KEY_PEPPER: keyPepper.toString("base64"),
      AGENTLINK_OPAQUE_ID_KEY: opaqueIdKey.toString("base64"),
      AGENTLINK_CALLBACK_SECRET_KEY: callbackSecretKey.toString("base64"),
      // Tests sweep by calling Expire: a timed sweep firing mid-test takes the card first, and Expire,
      // skipping the locked row, returns before that sweep commits.
      AGENTLINK_SWEEP_EVERY: "1h",
      ...options.env,
    },
    start: (env) => startAgentlink({ env, clock: options.clock, logger: createLogger("agentlink", {}, "error") }),
  });
  return {
    ...running,
    client: createInternalClient(AgentService, running.service.url),
    console: createInternalClient(AgentConsoleService, running.service.url),
    callbacks: createInternalClient(AgentCallbackService, running.service.url),
  };
}
