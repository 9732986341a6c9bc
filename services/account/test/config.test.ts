import { randomBytes } from "node:crypto";
import { createLogger } from "@svc/platform";
import { describe, expect, it } from "vitest";
import { settings } from "../src/config.ts";
import { startAccount } from "../src/server.ts";

const production = { SVC_DEPLOYMENT: "production", SVC_DATABASE_URL: "postgres://nowhere.invalid/x" };
const start = (env: NodeJS.ProcessEnv) => startAccount({ env, logger: createLogger("config-test", {}, "error") });
const base64 = (key: Buffer) => key.toString("base64");

describe("account secrets", () => {
  it("production refuses to start without its own keys, before opening anything", async () => {
    await expect(start(production)).rejects.toThrow(
      /ACCOUNT_SANDBOX_KEY is required in production[\s\S]*ACCOUNT_REF_PEPPER is required in production/,
    );
  });

  it("production refuses the built-in development keys", async () => {
    await expect(
      start({
        ...production,
        ACCOUNT_SANDBOX_KEY: base64(settings.sandboxKey.default as Buffer),
        ACCOUNT_REF_PEPPER: base64(randomBytes(32)),
      }),
    ).rejects.toThrow("ACCOUNT_SANDBOX_KEY is the built-in development value, which production refuses");
    await expect(
      start({
        ...production,
        ACCOUNT_SANDBOX_KEY: base64(randomBytes(32)),
        ACCOUNT_REF_PEPPER: base64(settings.refPepper.default as Buffer),
      }),
    ).rejects.toThrow("ACCOUNT_REF_PEPPER is the built-in development value, which production refuses");
  });
});
