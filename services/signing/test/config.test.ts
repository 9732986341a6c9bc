import { randomBytes } from "node:crypto";
import { ConfigError } from "@svc/platform";
import { describe, expect, it } from "vitest";
import { loadSigningConfig } from "../src/config.ts";
import { developmentKek, kekId } from "../src/key-encryption.ts";

const kek = randomBytes(32);
const quiet = { warn: () => {} };
const load = (env: NodeJS.ProcessEnv) => loadSigningConfig(env, quiet);

describe("signing configuration", () => {
  it("has the documented defaults", () => {
    const config = load({});
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
    const warnings: string[] = [];
    const config = loadSigningConfig(
      { SVC_DEPLOYMENT: "development" },
      { warn: (message) => void warnings.push(message) },
    );
    expect(config.kek.equals(developmentKek)).toBe(true);
    expect(config.kekId).toBe(kekId(developmentKek));
    expect(warnings).toEqual(["SIGNING_KEK is not set: using the INSECURE built-in development value"]);
  });

  it("takes the KEK from SIGNING_KEK", () => {
    const config = load({ SIGNING_KEK: kek.toString("base64") });
    expect(config.kek.equals(kek)).toBe(true);
    expect(config.kekId).toBe(kekId(kek));
  });

  it("refuses to run in production without a KEK, with the development KEK, or with the test clock", () => {
    expect(() => load({ SVC_DEPLOYMENT: "production" })).toThrow(ConfigError);
    expect(() => load({ SVC_DEPLOYMENT: "production" })).toThrow(/SIGNING_KEK is required in production/);
    expect(() => load({ SVC_DEPLOYMENT: "production", SIGNING_KEK: developmentKek.toString("base64") })).toThrow(
      "SIGNING_KEK is the built-in development value, which production refuses",
    );
    expect(() =>
      load({
        SVC_DEPLOYMENT: "production",
        SIGNING_KEK: kek.toString("base64"),
        SVC_CLOCK_FILE: "/tmp/clock",
      }),
    ).toThrow(/SVC_CLOCK_FILE/);
    expect(
      load({
        SVC_DEPLOYMENT: "production",
        SIGNING_KEK: kek.toString("base64"),
        SIGNING_ISSUER: "https://api.example.com",
      }).kek.equals(kek),
    ).toBe(true);
  });

  it("refuses a KEK that is not 32 bytes, and a publish lead shorter than the refresh interval", () => {
    expect(() => load({ SIGNING_KEK: randomBytes(16).toString("base64") })).toThrow(/SIGNING_KEK: must be 32 bytes/);
    expect(() => load({ SIGNING_PUBLISH_LEAD: "10s", SIGNING_REFRESH_EVERY: "30s" })).toThrow(/SIGNING_PUBLISH_LEAD/);
    expect(() => load({ SIGNING_PUBLISH_LEAD: "299s", SIGNING_REFRESH_EVERY: "30s" })).toThrow(/cache lifetime, 5m/);
  });

  it("requires the public https issuer in production", () => {
    const kek = randomBytes(32).toString("base64");
    expect(() => load({ SVC_DEPLOYMENT: "production", SIGNING_KEK: kek })).toThrow(/SIGNING_ISSUER/);
    expect(() =>
      load({ SVC_DEPLOYMENT: "production", SIGNING_KEK: kek, SIGNING_ISSUER: "http://api.example.com" }),
    ).toThrow(/SIGNING_ISSUER/);
    expect(
      load({ SVC_DEPLOYMENT: "production", SIGNING_KEK: kek, SIGNING_ISSUER: "https://api.example.com" }).issuer,
    ).toBe("https://api.example.com");
  });

  it("reads durations, with 0 turning the rotation schedule off, and keeps a retired key at least a token lifetime", () => {
    const config = load({
      SIGNING_ROTATE_EVERY: "0",
      SIGNING_PROOF_RETENTION: "0",
      SIGNING_PUBLISH_LEAD: "10m",
    });
    expect(config.rotateEvery).toBe(0);
    expect(config.rotation).toEqual({ publishLeadMs: 600_000, retainMs: 120_000 });
  });
});
