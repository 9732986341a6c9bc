import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { loadGatewayConfig, settings } from "../src/config.ts";
import { memoryLogger } from "./memory-logger.ts";

const quiet = memoryLogger();

describe("gateway key pepper", () => {
  it("production refuses a missing pepper", () => {
    expect(() => loadGatewayConfig({ SVC_DEPLOYMENT: "production" }, quiet)).toThrow(
      "GATEWAY_KEY_PEPPER is required in production",
    );
  });

  it("production refuses the built-in development pepper, even when set explicitly", () => {
    const builtIn = (settings.keyPepper.default as Buffer).toString("base64");
    expect(() => loadGatewayConfig({ SVC_DEPLOYMENT: "production", GATEWAY_KEY_PEPPER: builtIn }, quiet)).toThrow(
      "GATEWAY_KEY_PEPPER is the built-in development value, which production refuses",
    );
  });

  it("production takes its own pepper", () => {
    const pepper = randomBytes(32);
    const config = loadGatewayConfig(
      {
        SVC_DEPLOYMENT: "production",
        GATEWAY_KEY_PEPPER: pepper.toString("base64"),
        GATEWAY_CONSOLE_TOKEN: randomBytes(32).toString("base64url"),
      },
      quiet,
    );
    expect(config.keyPepper.equals(pepper)).toBe(true);
  });
});

describe("in_flight lease", () => {
  it("outlasts the longest long-poll (25 s): shorter than 30 s is refused", () => {
    expect(() => loadGatewayConfig({ GATEWAY_IN_FLIGHT_LEASE: "20s" }, quiet)).toThrow(
      "GATEWAY_IN_FLIGHT_LEASE: must be at least 30s",
    );
    expect(loadGatewayConfig({}, quiet).inFlightLease).toBe(60_000);
    expect(loadGatewayConfig({ GATEWAY_IN_FLIGHT_LEASE: "30s" }, quiet).inFlightLease).toBe(30_000);
  });
});

describe("the console's operator credential", () => {
  const pepper = randomBytes(32).toString("base64");

  it("production refuses to start without one", () => {
    expect(() => loadGatewayConfig({ SVC_DEPLOYMENT: "production", GATEWAY_KEY_PEPPER: pepper }, quiet)).toThrow(
      "GATEWAY_CONSOLE_TOKEN is required in production",
    );
  });

  it("production refuses the built-in development value", () => {
    const builtIn = settings.consoleToken.default as string;
    expect(() =>
      loadGatewayConfig(
        { SVC_DEPLOYMENT: "production", GATEWAY_KEY_PEPPER: pepper, GATEWAY_CONSOLE_TOKEN: builtIn },
        quiet,
      ),
    ).toThrow("GATEWAY_CONSOLE_TOKEN is the built-in development value, which production refuses");
  });

  it("refuses a short one", () => {
    expect(() => loadGatewayConfig({ GATEWAY_CONSOLE_TOKEN: "short" }, quiet)).toThrow(
      "GATEWAY_CONSOLE_TOKEN: must be at least 32 printable ASCII characters",
    );
  });

  it("development falls back to the built-in value with a warning naming the variable", () => {
    const logged = memoryLogger();
    expect(loadGatewayConfig({}, logged).consoleToken).toBe(settings.consoleToken.default);
    expect(logged.entries).toContainEqual(
      expect.objectContaining({ level: "warn", variable: "GATEWAY_CONSOLE_TOKEN" }),
    );
  });
});

describe("the development identity provider's setting", () => {
  const production = {
    SVC_DEPLOYMENT: "production",
    GATEWAY_KEY_PEPPER: randomBytes(32).toString("base64"),
    GATEWAY_CONSOLE_TOKEN: randomBytes(32).toString("base64url"),
  };

  it("production refuses GATEWAY_DEV_IDP_ISSUER", () => {
    expect(() => loadGatewayConfig({ ...production, GATEWAY_DEV_IDP_ISSUER: "http://127.0.0.1:8070" }, quiet)).toThrow(
      "GATEWAY_DEV_IDP_ISSUER (the development identity provider) is refused in production",
    );
    expect(loadGatewayConfig(production, quiet).devIdpIssuer).toBe("");
  });

  it("development takes it, without a trailing slash", () => {
    expect(loadGatewayConfig({ GATEWAY_DEV_IDP_ISSUER: "http://127.0.0.1:8070/" }, quiet).devIdpIssuer).toBe(
      "http://127.0.0.1:8070",
    );
  });
});
