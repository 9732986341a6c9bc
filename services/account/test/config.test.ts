import { generateKeyPairSync, randomBytes, X509Certificate } from "node:crypto";
import { createLogger, ManualClock } from "@svc/platform";
import { describe, expect, it } from "vitest";
import { issueCertificate } from "../src/age/wallet/mdoc-certificates.ts";
import { walletDependencies } from "../src/age/wallet/wallet-setup.ts";
import { settings } from "../src/config.ts";
import { startAccount } from "../src/server.ts";

const production = { SVC_DEPLOYMENT: "production", SVC_DATABASE_URL: "postgres://nowhere.invalid/x" };
const start = (env: NodeJS.ProcessEnv) => startAccount({ env, logger: createLogger("config-test", {}, "error") });
const base64 = (key: Buffer) => key.toString("base64");

describe("account secrets", () => {
  it("production refuses to start without its own keys, before opening anything", async () => {
    await expect(start(production)).rejects.toThrow(
      /ACCOUNT_SANDBOX_KEY is required in production[\s\S]*ACCOUNT_REF_PEPPER is required in production[\s\S]*ACCOUNT_EMAIL_PEPPER is required in production/,
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
    await expect(
      start({
        ...production,
        ACCOUNT_SANDBOX_KEY: base64(randomBytes(32)),
        ACCOUNT_REF_PEPPER: base64(randomBytes(32)),
        ACCOUNT_EMAIL_PEPPER: base64(settings.emailPepper.default as Buffer),
      }),
    ).rejects.toThrow("ACCOUNT_EMAIL_PEPPER is the built-in development value, which production refuses");
  });

  it("production needs its own verifier certificate and refuses the one development uses at every start", async () => {
    await expect(start(production)).rejects.toThrow(/ACCOUNT_VERIFIER_CERTIFICATE is required in production/);
    const development = new X509Certificate(settings.verifierCertificate.default as Buffer).toString();
    await expect(start({ ...production, ACCOUNT_VERIFIER_CERTIFICATE: development })).rejects.toThrow(
      "ACCOUNT_VERIFIER_CERTIFICATE is the built-in development value, which production refuses",
    );
  });

  it("a verifier certificate that is not a certificate, or certifies another key, stops the start", async () => {
    await expect(start({ ACCOUNT_VERIFIER_CERTIFICATE: "garbage" })).rejects.toThrow(
      "ACCOUNT_VERIFIER_CERTIFICATE: not a PEM certificate",
    );
    const other = generateKeyPairSync("ec", { namedCurve: "P-256" });
    const name = { country: "UT", commonName: "another key" };
    const certificate = new X509Certificate(
      issueCertificate({
        serial: 1,
        subject: name,
        issuer: name,
        publicKey: other.publicKey,
        signingKey: other.privateKey,
        role: "verifier",
        notBefore: new Date("2000-01-01T00:00:00Z"),
        notAfter: new Date("2100-01-01T00:00:00Z"),
      }),
    );
    // What the service's start builds its wallet side with (after opening its database).
    expect(() =>
      walletDependencies({
        verifierKey: settings.verifierKey.default as Buffer,
        verifierCertificate: Buffer.from(certificate.raw),
        devWalletIssuerKey: null,
        walletIssuers: [],
        walletIacaRoots: [],
        walletCredentialTypes: [],
        clock: new ManualClock(new Date()),
      }),
    ).toThrow("ACCOUNT_VERIFIER_CERTIFICATE does not certify the public key of ACCOUNT_VERIFIER_KEY");
  });
});
