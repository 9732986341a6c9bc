import { ConfigError, loadConfig, parse } from "@svc/platform";
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
