import { randomBytes } from "node:crypto";
import { createLogger } from "@svc/platform";
import { describe, expect, it } from "vitest";
import { settings } from "../src/config.ts";
import { startGate } from "../src/server.ts";

const start = (env: NodeJS.ProcessEnv) =>
  startGate({
    env: { SVC_DATABASE_URL: "postgres://nowhere.invalid/x", ...env },
    logger: createLogger("config-test", {}, "error"),
  });

describe("gate reference key", () => {
  it.each(["SVC_DEPLOYMENT", "GATE_DEPLOYMENT"])(
    "production (%s) refuses to start without its own key, before opening anything",
    async (deployment) => {
      await expect(start({ [deployment]: "production" })).rejects.toThrow("GATE_REF_KEY is required in production");
    },
  );

  it("production refuses the built-in development key", async () => {
    const builtIn = (settings.refKey.default as Buffer).toString("base64");
    await expect(start({ GATE_DEPLOYMENT: "production", GATE_REF_KEY: builtIn })).rejects.toThrow(
      "GATE_REF_KEY is the built-in development value, which production refuses",
    );
  });

  it("rejects a key that is not 32 bytes", async () => {
    await expect(start({ GATE_REF_KEY: randomBytes(16).toString("base64") })).rejects.toThrow(
      "GATE_REF_KEY: must be 32 bytes, base64-encoded",
    );
  });
});
