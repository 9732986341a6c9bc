import { generateKeyPairSync, X509Certificate as X509 } from "node:crypto";
import { ManualClock } from "@svc/platform";
import { describe, expect, it } from "vitest";
import { deviceResponse } from "../../../test/harness/mdoc-holder.ts";
import { DevIssuers } from "../src/age/wallet/dev-issuers.ts";
import { DevMdocIssuer } from "../src/age/wallet/dev-mdoc-issuer.ts";
import { issueCertificate } from "../src/age/wallet/mdoc-certificates.ts";
import { mdl, verifyMdocPresentation } from "../src/age/wallet/mdoc-verifier.ts";
import { parseIacaTrustList } from "../src/age/wallet/trust-list.ts";
import { walletDependencies } from "../src/age/wallet/wallet-setup.ts";
import { settings } from "../src/config.ts";

const now = new Date("2026-11-22T10:00:00Z");
const transcript = {
  clientId: "https://verify.example",
  nonce: "n-0123456789",
  responseUri: "https://verify.example/wallet/responses/apr_1",
};
const expected = {
  type: mdl,
  nonce: transcript.nonce,
  handover: { kind: "redirect" as const, clientId: transcript.clientId, responseUri: transcript.responseUri },
  thresholds: [18],
  now,
};
const device = generateKeyPairSync("ec", { namedCurve: "P-256" });
const deviceJwk = device.publicKey.export({ format: "jwk" });

/** A DeviceResponse of `mdoc` disclosing age_over_18, signed by the device over `transcript`. */
const present = (mdoc: string) =>
  deviceResponse({ mdoc, elements: ["age_over_18"], key: device.privateKey, transcript });

const dependencies = (devWalletIssuerKey: Buffer | null, iacaRoots: string) =>
  walletDependencies({
    verifierKey: settings.verifierKey.default as Buffer,
    verifierCertificate: settings.verifierCertificate.default as Buffer,
    devWalletIssuerKey,
    walletIssuers: [],
    walletIacaRoots: parseIacaTrustList(iacaRoots),
    walletCredentialTypes: ["urn:eudi:pid:1"],
    clock: new ManualClock(now),
  });

describe("ACCOUNT_WALLET_IACA_ROOTS", () => {
  const outside = new DevMdocIssuer("https://issuer.example", Buffer.alloc(32, 4), {
    root: { country: "NL", commonName: "Example IACA" },
    documentSigner: { country: "NL", commonName: "Example document signer" },
  });
  const configured = JSON.stringify([
    { issuer: "https://issuer.example", certificates: [outside.trusted().certificate.toString()] },
  ]);

  it("a configured IACA root is trusted, and its issuer name is the one kept", async () => {
    const wallet = dependencies(null, configured);
    const mdoc = await outside.issue({ birthDate: "1996-05-17", deviceJwk: deviceJwk as never, now, type: mdl });
    expect(
      await verifyMdocPresentation(await present(mdoc), expected, wallet.iacaRoots, wallet.verifier),
    ).toMatchObject({
      accepted: true,
      issuer: "https://issuer.example",
      disclosed: new Map([[18, true]]),
    });
  });

  it("with the development issuer off, its mdocs are untrusted; on, they are trusted beside the configured roots", async () => {
    const seed = Buffer.alloc(32, 6);
    const development = await new DevIssuers(seed).issue({
      birthDate: "1996-05-17",
      holderJwk: deviceJwk,
      issuer: "development",
      format: "mdoc",
      revoked: false,
      now,
    });
    const off = dependencies(null, configured);
    expect(await verifyMdocPresentation(await present(development), expected, off.iacaRoots, off.verifier)).toEqual({
      accepted: false,
      reason: "untrusted_issuer",
    });
    const on = dependencies(seed, configured);
    expect(on.iacaRoots).toHaveLength(2);
    expect(await verifyMdocPresentation(await present(development), expected, on.iacaRoots, on.verifier)).toMatchObject(
      {
        accepted: true,
        issuer: "https://wallet-issuer.development.invalid",
      },
    );
  });

  it("a bad list stops the service at start, naming the entry", () => {
    const leafKeys = generateKeyPairSync("ec", { namedCurve: "P-256" });
    const name = { country: "NL", commonName: "not a CA" };
    const leaf = new X509(
      issueCertificate({
        serial: 3,
        subject: name,
        issuer: name,
        publicKey: leafKeys.publicKey,
        signingKey: leafKeys.privateKey,
        role: "document-signer",
        notBefore: now,
        notAfter: new Date(now.getTime() + 86_400_000),
      }),
    ).toString();
    expect(() => parseIacaTrustList("{}")).toThrow("must be a JSON array of {issuer, certificates}");
    expect(() => parseIacaTrustList('[{"certificates": ["x"]}]')).toThrow("entry 0: issuer must be a non-empty string");
    expect(() => parseIacaTrustList('[{"issuer": "a", "certificates": []}]')).toThrow(
      "entry 0: certificates must be a non-empty array of PEM certificates",
    );
    expect(() => parseIacaTrustList('[{"issuer": "a", "certificates": ["garbage"]}]')).toThrow(
      "entry 0: not a PEM certificate",
    );
    expect(() => parseIacaTrustList(JSON.stringify([{ issuer: "a", certificates: [leaf] }]))).toThrow(
      "entry 0: C=NL, CN=not a CA is not a CA certificate",
    );
  });
});
