import { randomBytes } from "node:crypto";
import { ConfigError } from "@svc/platform";
import { describe, expect, it } from "vitest";
import { loadSigningConfig } from "../src/config.ts";
import { developmentKek, kekId } from "../src/key-encryption.ts";

const kek = randomBytes(32);

describe("signing configuration", () => {
  it("has the documented defaults", () => {
    const config = loadSigningConfig({});
    expect(config).toMatchObject({
      host: "127.0.0.1",
      port: 9091,
      issuer: "http://127.0.0.1:8080",
      deployment: "development",
      publishLead: 300_000,
      proofRetention: 400 * 86_400_000,
      rotateEvery: 30 * 86_400_000,
      rotation: { publishLeadMs: 300_000, retainMs: 400 * 86_400_000 },
    });
  });

  it("uses the built-in development KEK in development when none is given, and says so", () => {
    const config = loadSigningConfig({ SVC_DEPLOYMENT: "development" });
    expect(config.developmentKek).toBe(true);
    expect(config.kek.equals(developmentKek)).toBe(true);
    expect(config.kekId).toBe(kekId(developmentKek));
  });

  it("takes the KEK from SIGNING_KEK", () => {
    const config = loadSigningConfig({ SIGNING_KEK: kek.toString("base64") });
    expect(config.developmentKek).toBe(false);
    expect(config.kek.equals(kek)).toBe(true);
  });

  it("refuses to run in production without a KEK, with the development KEK, or with the test clock", () => {
    expect(() => loadSigningConfig({ SVC_DEPLOYMENT: "production" })).toThrow(ConfigError);
    expect(() => loadSigningConfig({ SVC_DEPLOYMENT: "production" })).toThrow(
      /SIGNING_KEK is required when SVC_DEPLOYMENT is production/,
    );
    expect(() =>
      loadSigningConfig({ SVC_DEPLOYMENT: "production", SIGNING_KEK: developmentKek.toString("base64") }),
    ).toThrow(/development KEK/);
    expect(() =>
      loadSigningConfig({
        SVC_DEPLOYMENT: "production",
        SIGNING_KEK: kek.toString("base64"),
        SVC_CLOCK_FILE: "/tmp/clock",
      }),
    ).toThrow(/SVC_CLOCK_FILE/);
    expect(
      loadSigningConfig({
        SVC_DEPLOYMENT: "production",
        SIGNING_KEK: kek.toString("base64"),
        SIGNING_ISSUER: "https://api.example.com",
      }).kek.equals(kek),
    ).toBe(true);
  });

  it("refuses a KEK that is not 32 bytes, and a publish lead shorter than the refresh interval", () => {
    expect(() => loadSigningConfig({ SIGNING_KEK: randomBytes(16).toString("base64") })).toThrow(
      /SIGNING_KEK: must be 32 bytes/,
    );
    expect(() => loadSigningConfig({ SIGNING_PUBLISH_LEAD: "10s", SIGNING_REFRESH_EVERY: "30s" })).toThrow(
      /SIGNING_PUBLISH_LEAD/,
    );
    expect(() => loadSigningConfig({ SIGNING_PUBLISH_LEAD: "299s", SIGNING_REFRESH_EVERY: "30s" })).toThrow(
      /cache lifetime, 5m/,
    );
  });

  it("requires the public https issuer in production", () => {
    const kek = randomBytes(32).toString("base64");
    expect(() => loadSigningConfig({ SVC_DEPLOYMENT: "production", SIGNING_KEK: kek })).toThrow(/SIGNING_ISSUER/);
    expect(() =>
      loadSigningConfig({ SVC_DEPLOYMENT: "production", SIGNING_KEK: kek, SIGNING_ISSUER: "http://api.example.com" }),
    ).toThrow(/SIGNING_ISSUER/);
    expect(
      loadSigningConfig({ SVC_DEPLOYMENT: "production", SIGNING_KEK: kek, SIGNING_ISSUER: "https://api.example.com" })
        .issuer,
    ).toBe("https://api.example.com");
  });

  it("reads durations, with 0 turning the rotation schedule off, and keeps a retired key at least a token lifetime", () => {
    const config = loadSigningConfig({
      SIGNING_ROTATE_EVERY: "0",
      SIGNING_PROOF_RETENTION: "0",
      SIGNING_PUBLISH_LEAD: "10m",
    });
    expect(config.rotateEvery).toBe(0);
    expect(config.rotation).toEqual({ publishLeadMs: 600_000, retainMs: 120_000 });
  });
});
