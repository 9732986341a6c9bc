import { ConfigError, commonSettings, developmentSecret, loadConfig, parse } from "@svc/platform";
import { describe, expect, it } from "vitest";

const settings = {
  port: { parse: parse.port, default: 9000, description: "port" },
  databaseUrl: { parse: parse.url, shared: true, description: "database" },
  rotateEvery: { parse: parse.duration, default: 0, description: "rotation period" },
};

describe("layered configuration", () => {
  it("takes defaults, then the service's own variables, then the shared SVC_ ones", () => {
    const config = loadConfig("SIGNING", settings, { SVC_DATABASE_URL: "postgres://a/b", SIGNING_ROTATE_EVERY: "30d" });
    expect(config).toEqual({ port: 9000, databaseUrl: "postgres://a/b", rotateEvery: 30 * 86400e3 });
    const own = loadConfig("SIGNING", settings, {
      SVC_DATABASE_URL: "postgres://a/b",
      SIGNING_DATABASE_URL: "postgres://c/d",
    });
    expect(own.databaseUrl).toBe("postgres://c/d");
  });

  it("names every bad or missing variable at once", () => {
    expect(() => loadConfig("SIGNING", settings, { SIGNING_PORT: "99999", SIGNING_ROTATE_EVERY: "soon" })).toThrow(
      ConfigError,
    );
    try {
      loadConfig("SIGNING", settings, { SIGNING_PORT: "99999", SIGNING_ROTATE_EVERY: "soon" });
    } catch (error) {
      const message = (error as Error).message;
      expect(message).toContain("SIGNING_PORT: not a TCP port: 99999");
      expect(message).toContain("SIGNING_ROTATE_EVERY: not a duration");
      expect(message).toContain("SIGNING_DATABASE_URL (or SVC_DATABASE_URL) is required");
    }
  });
});

describe("development secrets", () => {
  const developmentKey = Buffer.alloc(32, 1);
  const secretSettings = {
    deployment: commonSettings.deployment,
    refKey: developmentSecret({ parse: parse.base64Key32, developmentDefault: developmentKey, description: "ref key" }),
  };
  const ownKey = Buffer.alloc(32, 2).toString("base64");
  const load = (env: NodeJS.ProcessEnv) => {
    const warnings: string[] = [];
    const config = loadConfig("GATE", secretSettings, env, { warn: (message) => void warnings.push(message) });
    return { config, warnings };
  };

  it("development falls back to the default with one warning naming the variable", () => {
    const { config, warnings } = load({});
    expect(config.refKey.equals(developmentKey)).toBe(true);
    expect(warnings).toEqual(["GATE_REF_KEY is not set: using the INSECURE built-in development value"]);
  });

  it("development takes a given secret, the default included, without a warning", () => {
    expect(load({ GATE_REF_KEY: ownKey })).toEqual({
      config: { deployment: "development", refKey: Buffer.from(ownKey, "base64") },
      warnings: [],
    });
    expect(load({ GATE_REF_KEY: developmentKey.toString("base64") }).warnings).toEqual([]);
  });

  it("production refuses a missing secret", () => {
    expect(() => load({ SVC_DEPLOYMENT: "production" })).toThrow(ConfigError);
    expect(() => load({ SVC_DEPLOYMENT: "production" })).toThrow("GATE_REF_KEY is required in production: ref key");
  });

  it("production refuses a secret equal to the default", () => {
    expect(() => load({ SVC_DEPLOYMENT: "production", GATE_REF_KEY: developmentKey.toString("base64") })).toThrow(
      "GATE_REF_KEY is the built-in development value, which production refuses",
    );
  });

  it("production is the config's own deployment setting, read from the service's prefix too", () => {
    expect(() => load({ GATE_DEPLOYMENT: "production" })).toThrow("GATE_REF_KEY is required in production");
    expect(() => load({ GATE_DEPLOYMENT: "production", GATE_REF_KEY: developmentKey.toString("base64") })).toThrow(
      "GATE_REF_KEY is the built-in development value",
    );
  });

  it("production takes its own secret", () => {
    expect(load({ SVC_DEPLOYMENT: "production", GATE_REF_KEY: ownKey })).toEqual({
      config: { deployment: "production", refKey: Buffer.from(ownKey, "base64") },
      warnings: [],
    });
  });

  it("reports a malformed secret as a bad value, not as a missing one", () => {
    expect(() => load({ SVC_DEPLOYMENT: "production", GATE_REF_KEY: "c2hvcnQ=" })).toThrow(
      /^invalid configuration:\n {2}GATE_REF_KEY: must be 32 bytes, base64-encoded$/,
    );
  });

  it("needs the deployment setting beside the secrets", () => {
    const { refKey } = secretSettings;
    expect(() => loadConfig("GATE", { refKey }, {}, { warn: () => {} })).toThrow(/no deployment setting/);
  });
});
