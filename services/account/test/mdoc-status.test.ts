import { generateKeyPairSync } from "node:crypto";
import { deflateSync } from "node:zlib";
import { cborDecode, cborEncode } from "@animo-id/mdoc";
import { ManualClock } from "@svc/platform";
import { describe, expect, it } from "vitest";
import { deviceResponse } from "../../../test/harness/mdoc-holder.ts";
import { DevIssuers } from "../src/age/wallet/dev-issuers.ts";
import { DevMdocIssuer } from "../src/age/wallet/dev-mdoc-issuer.ts";
import { mdl, verifyMdocPresentation } from "../src/age/wallet/mdoc-verifier.ts";
import { parseIacaTrustList } from "../src/age/wallet/trust-list.ts";
import type { VerifierDependencies } from "../src/age/wallet/verification.ts";
import { walletDependencies } from "../src/age/wallet/wallet-setup.ts";
import { settings } from "../src/config.ts";

/**
 * The status list entry of an mdoc (IETF Token Status List, CWT form, as ISO 18013-5 second edition
 * references it from the MSO): a revoked or suspended mdoc is refused, and so is one whose list cannot
 * be read, is not signed by a certificate of the mdoc's own IACA root, or does not speak for its `uri`.
 */
const now = new Date("2026-11-22T10:00:00Z");
const uri = "https://issuer.example/status/7";
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
const deviceJwk = device.publicKey.export({ format: "jwk" }) as never;

const names = (label: string) => ({
  root: { country: "NL", commonName: `${label} IACA` },
  documentSigner: { country: "NL", commonName: `${label} document signer` },
});
const issuer = new DevMdocIssuer("https://issuer.example", Buffer.alloc(32, 4), names("Example"));
/** Trusted here too, but not the root of `issuer`'s mdocs. */
const neighbour = new DevMdocIssuer("https://neighbour.example", Buffer.alloc(32, 5), names("Neighbour"));
/** In no trust list. */
const stranger = new DevMdocIssuer("https://stranger.example", Buffer.alloc(32, 8), names("Stranger"));

const roots = parseIacaTrustList(
  JSON.stringify(
    [issuer, neighbour].map((i) => ({
      issuer: i.trusted().issuer,
      certificates: [i.trusted().certificate.toString()],
    })),
  ),
);

/** Status dependencies that answer `uri` with `token` (or fail), checking every signature afresh. */
function serving(token: Uint8Array | Error) {
  const fetched: string[] = [];
  const deps: Pick<VerifierDependencies, "cwtStatusList" | "statusListSignedBy"> = {
    cwtStatusList: async (at) => {
      fetched.push(at);
      if (token instanceof Error) throw token;
      return token;
    },
    statusListSignedBy: (_token, _signer, verify) => verify(),
  };
  return { deps, fetched };
}

async function present(idx: number) {
  const mdoc = await issuer.issue({ birthDate: "1996-05-17", deviceJwk, now, status: { idx, uri }, type: mdl });
  return deviceResponse({ mdoc, elements: ["age_over_18"], key: device.privateKey, transcript });
}

/** The list [valid, revoked, suspended] at `uri`, as `by` signs it. */
const list = (by: DevMdocIssuer, at = uri, signedAt = now) => by.statusList(at, [0, 1, 2], signedAt);

describe("the status list entry of an mdoc", () => {
  it("a valid entry is accepted, and the list is fetched from the MSO's uri", async () => {
    const { deps, fetched } = serving(list(issuer));
    expect(await verifyMdocPresentation(await present(0), expected, roots, deps)).toMatchObject({
      accepted: true,
      issuer: "https://issuer.example",
      disclosed: new Map([[18, true]]),
    });
    expect(fetched).toEqual([uri]);
  });

  it("a revoked entry, and a suspended one, are refused as revoked", async () => {
    for (const idx of [1, 2]) {
      const { deps } = serving(list(issuer));
      expect(await verifyMdocPresentation(await present(idx), expected, roots, deps)).toEqual({
        accepted: false,
        reason: "revoked_credential",
      });
    }
  });

  it("a list signed by a key no trust list holds is refused", async () => {
    const { deps } = serving(list(stranger));
    expect(await verifyMdocPresentation(await present(0), expected, roots, deps)).toEqual({
      accepted: false,
      reason: "status_unavailable",
    });
  });

  it("a list signed under another trusted IACA root than the mdoc's is refused", async () => {
    const { deps } = serving(list(neighbour));
    expect(await verifyMdocPresentation(await present(0), expected, roots, deps)).toEqual({
      accepted: false,
      reason: "status_unavailable",
    });
  });

  it("an unreachable list, garbage, and a list changed under its signature are refused", async () => {
    const honest = list(issuer);
    const decoded = cborDecode(honest.subarray(1)) as unknown[];
    const claims = cborDecode(decoded[2] as Uint8Array) as Map<number, unknown>;
    // Every entry made valid (an all-zero list), the signature kept.
    claims.set(
      65533,
      new Map<string, unknown>([
        ["bits", 1],
        ["lst", deflateSync(Buffer.alloc(1))],
      ]),
    );
    const tampered = Buffer.concat([
      Buffer.from([0xd2]),
      cborEncode([decoded[0], decoded[1], cborEncode(claims), decoded[3]]),
    ]);
    for (const token of [new Error("connection refused"), Buffer.from("not a status list"), tampered]) {
      const { deps } = serving(token);
      expect(await verifyMdocPresentation(await present(1), expected, roots, deps)).toEqual({
        accepted: false,
        reason: "status_unavailable",
      });
    }
  });

  it("a list that speaks for another uri, one signed in the future, and an entry past its end are refused", async () => {
    const cases: [Uint8Array, number][] = [
      [list(issuer, "https://issuer.example/status/8"), 0],
      [list(issuer, uri, new Date(now.getTime() + 3_600_000)), 0],
      [list(issuer), 1000],
    ];
    for (const [token, idx] of cases) {
      const { deps } = serving(token);
      expect(await verifyMdocPresentation(await present(idx), expected, roots, deps)).toEqual({
        accepted: false,
        reason: "status_unavailable",
      });
    }
  });

  it("an MSO whose status is not a status list entry is malformed, and its uri is never fetched", async () => {
    const { deps, fetched } = serving(list(issuer));
    expect(await verifyMdocPresentation(await present(-1), expected, roots, deps)).toEqual({
      accepted: false,
      reason: "malformed_presentation",
    });
    expect(fetched).toEqual([]);
  });

  it("an mdoc without a status entry is not checked against any list", async () => {
    const mdoc = await issuer.issue({ birthDate: "1996-05-17", deviceJwk, now, type: mdl });
    const { deps, fetched } = serving(new Error("never asked"));
    const response = await deviceResponse({ mdoc, elements: ["age_over_18"], key: device.privateKey, transcript });
    expect(await verifyMdocPresentation(response, expected, roots, deps)).toMatchObject({ accepted: true });
    expect(fetched).toEqual([]);
  });
});

describe("the development issuer's mdoc status list", () => {
  const seed = Buffer.alloc(32, 6);
  const clock = new ManualClock(now);
  const wallet = walletDependencies({
    verifierKey: settings.verifierKey.default as Buffer,
    verifierCertificate: settings.verifierCertificate.default as Buffer,
    devWalletIssuerKey: seed,
    walletIssuers: [],
    walletIacaRoots: [],
    walletCredentialTypes: ["urn:eudi:pid:1"],
    clock,
  });
  const issue = (revoked: boolean) =>
    new DevIssuers(seed).issue({
      birthDate: "1996-05-17",
      holderJwk: deviceJwk,
      issuer: "development",
      format: "mdoc",
      revoked,
      now,
    });
  const verify = async (mdoc: string) =>
    verifyMdocPresentation(
      await deviceResponse({ mdoc, elements: ["age_over_18"], key: device.privateKey, transcript }),
      expected,
      wallet.iacaRoots,
      wallet.verifier,
    );

  it("issues with a status entry, answers its list, and revokes", async () => {
    expect(await verify(await issue(false))).toMatchObject({ accepted: true });
    expect(await verify(await issue(true))).toEqual({ accepted: false, reason: "revoked_credential" });
  });
});
