import { randomBytes } from "node:crypto";
import { ConfigError, createLogger, type Logger } from "@svc/platform";
import { describe, expect, it } from "vitest";
import { developmentSecrets, resolveSecrets } from "../src/config.ts";
import { startAccount } from "../src/server.ts";

function recordingLogger(): Logger & { warnings: string[] } {
  const warnings: string[] = [];
  const base = createLogger("config-test", {}, "error");
  return Object.assign({ ...base, warn: (msg: string) => void warnings.push(msg), child: () => base }, { warnings });
}

describe("account secrets", () => {
  it("development falls back to the built-in values, with a warning for each", () => {
    const logger = recordingLogger();
    const secrets = resolveSecrets({}, logger);
    expect(secrets.sandboxKey.equals(developmentSecrets.sandboxKey)).toBe(true);
    expect(secrets.refPepper.equals(developmentSecrets.refPepper)).toBe(true);
    expect(logger.warnings).toEqual([
      "ACCOUNT_SANDBOX_KEY is not set: using the INSECURE built-in development value",
      "ACCOUNT_REF_PEPPER is not set: using the INSECURE built-in development value",
    ]);
  });

  it("takes the configured keys", () => {
    const sandboxKey = randomBytes(32);
    const refPepper = randomBytes(32);
    const logger = recordingLogger();
    const secrets = resolveSecrets(
      {
        SVC_DEPLOYMENT: "production",
        ACCOUNT_SANDBOX_KEY: sandboxKey.toString("base64"),
        ACCOUNT_REF_PEPPER: refPepper.toString("base64"),
      },
      logger,
    );
    expect([secrets.sandboxKey.equals(sandboxKey), secrets.refPepper.equals(refPepper), logger.warnings]).toEqual([
      true,
      true,
      [],
    ]);
  });

  it("production requires both keys and refuses the built-in ones", () => {
    expect(() => resolveSecrets({ SVC_DEPLOYMENT: "production" }, recordingLogger())).toThrow(ConfigError);
    expect(() => resolveSecrets({ SVC_DEPLOYMENT: "production" }, recordingLogger())).toThrow(
      /ACCOUNT_SANDBOX_KEY is required in production[^]*ACCOUNT_REF_PEPPER is required in production/,
    );
    const builtIn = {
      SVC_DEPLOYMENT: "production",
      ACCOUNT_SANDBOX_KEY: developmentSecrets.sandboxKey.toString("base64"),
      ACCOUNT_REF_PEPPER: randomBytes(32).toString("base64"),
    };
    expect(() => resolveSecrets(builtIn, recordingLogger())).toThrow(
      "ACCOUNT_SANDBOX_KEY is the built-in development value, which production refuses",
    );
    expect(() => resolveSecrets({ ACCOUNT_REF_PEPPER: "c2hvcnQ=" }, recordingLogger())).toThrow(
      "ACCOUNT_REF_PEPPER: must be 32 bytes, base64-encoded",
    );
  });

  it("the service refuses to start in production without them, before opening anything", async () => {
    const started = startAccount({
      env: { SVC_DEPLOYMENT: "production", SVC_DATABASE_URL: "postgres://nowhere.invalid/x" },
      logger: recordingLogger(),
    });
    await expect(started).rejects.toThrow("ACCOUNT_SANDBOX_KEY is required in production");
  });
});
