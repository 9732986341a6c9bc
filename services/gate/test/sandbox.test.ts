import { createLogger } from "@svc/platform";
import { SandboxBehavior } from "@svc/proto/account/v1/account_pb.js";
import { describe, expect, it } from "vitest";
import type { Ceremony } from "../src/ceremony/ceremony.ts";
import { SandboxResponder } from "../src/ceremony/sandbox.ts";

const responder = (deployment: "development" | "production") => {
  const asked: string[] = [];
  const account = {
    getHuman: async ({ svcUserId }: { svcUserId: string }) => {
      asked.push(svcUserId);
      return { sandboxBehavior: SandboxBehavior.CONFIRM };
    },
  };
  const sandbox = new SandboxResponder({
    ceremony: {} as Ceremony,
    account: account as never,
    rp: { rpId: "127.0.0.1", origin: "http://127.0.0.1:8080" },
    logger: createLogger("test", {}, "error"),
    deployment,
  });
  return { sandbox, asked };
};

describe("sandbox humans", () => {
  it("are honoured in the development environment of a development deployment", async () => {
    const { sandbox } = responder("development");
    expect(await sandbox.behaviorOf("u-1", "development")).toBe(SandboxBehavior.CONFIRM);
  });
  it("are never honoured in the production environment or a production deployment, without even asking", async () => {
    const dev = responder("development");
    expect(await dev.sandbox.behaviorOf("u-1", "production")).toBeUndefined();
    const prod = responder("production");
    expect(await prod.sandbox.behaviorOf("u-1", "development")).toBeUndefined();
    expect([...dev.asked, ...prod.asked]).toEqual([]);
  });
});
