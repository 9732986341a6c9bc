import { ManualClock } from "@svc/platform";
import { SandboxBehavior } from "@svc/proto/account/v1/account_pb.js";
import { Environment } from "@svc/proto/common/v1/caller_pb.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { deviceResponse, euAgeVerification, mdocVpToken, withElementValue } from "../../../test/harness/mdoc-holder.ts";
import {
  credentialParts,
  disclosedName,
  type Holder,
  jwtPayload,
  newHolder,
  presentation,
  vpToken,
  withHeader,
  withPayload,
  withValue,
} from "../../../test/harness/wallet-holder.ts";
import { startTestAccount, type TestAccount } from "./support/account.ts";

/**
 * Hostile wallet presentations, through the account service's RPCs: each starts from an honest
 * credential of the development issuer bound to the test's own holder key, alters one thing, and must
 * be refused for its own reason, store nothing, and leave the presentation request pending.
 */
const start = new Date("2026-11-22T10:00:00Z");
const clock = new ManualClock(start);
const clientId = "https://verify.example";
const birthDate = "1996-05-17";
let account: TestAccount;

beforeAll(async () => {
  account = await startTestAccount("account_age_wallet_hostile", { clock });
});
afterAll(() => account?.stop());

const seconds = () => Math.floor(clock.now().getTime() / 1000);

async function sandboxHuman() {
  return (
    await account.console.createSandboxHuman({
      environment: Environment.DEVELOPMENT,
      behavior: SandboxBehavior.CONFIRM,
    })
  ).svcUserId;
}

/** A presentation request (ahead of time for a human, or a gate request's at one threshold) and what it asks. */
async function open(target: { svcUserId: string } | { requestId: string; threshold: number }) {
  const started = await account.client.startAgePresentation({ ...target, clientId });
  const { requestObject } = await account.client.getAgePresentationRequestObject({
    presentationId: started.presentationId,
  });
  const request = jwtPayload(requestObject);
  return {
    id: started.presentationId,
    nonce: String(request.nonce),
    aud: String(request.client_id),
    responseUri: String(request.response_uri),
  };
}

async function mdocCredential(holder: Holder, issuer = "development", revoked = false, format = "mdoc") {
  const { credential } = await account.console.issueDevAgeCredential({
    birthDate,
    holderJwk: holder.jwk,
    issuer,
    format,
    revoked,
  });
  return credential;
}

async function credential(holder: Holder, options: { issuer?: string; revoked?: boolean } = {}) {
  const { credential } = await account.console.issueDevAgeCredential({
    birthDate,
    holderJwk: holder.jwk,
    issuer: options.issuer ?? "development",
    revoked: options.revoked ?? false,
  });
  return credentialParts(credential);
}

const submit = (id: string, token: string, state = id) =>
  account.client.submitAgePresentation({ presentationId: id, vpToken: token, state });

const evidenceRows = async () =>
  Number((await account.sql<{ n: string }>(`select count(*) as n from age_evidence`))[0]?.n);

/** Refused for `reason`, no evidence added, and the request still pending with nothing of a verdict on it. */
async function expectRefused(id: string, token: string, reason: string, state = id) {
  const before = await evidenceRows();
  expect(await submit(id, token, state)).toMatchObject({ accepted: false, reason });
  expect(await evidenceRows()).toBe(before);
  const [row] = await account.sql(
    `select state, last_refusal, issuer, threshold, result, verified_at from age_presentation where id = $1`,
    [id],
  );
  expect(row).toEqual({
    state: "pending",
    last_refusal: reason,
    issuer: null,
    threshold: null,
    result: null,
    verified_at: null,
  });
}

describe("hostile wallet presentations", () => {
  const holder = newHolder();
  let honest: Awaited<ReturnType<typeof credential>>;
  let svcUserId: string;
  let request: Awaited<ReturnType<typeof open>>;
  /** The honest presentation for `request`, with `change` applied to its parts. */
  const present = (change: Partial<Parameters<typeof presentation>[0]> = {}) =>
    vpToken(
      presentation({
        issuerJwt: honest.issuerJwt,
        disclosures: honest.disclosures,
        key: holder.privateKey,
        nonce: request.nonce,
        aud: request.aud,
        iat: seconds(),
        ...change,
      }),
    );

  beforeAll(async () => {
    honest = await credential(holder);
    svcUserId = await sandboxHuman();
  });

  it("the honest presentation is accepted and kept as verdicts only (the control for every case below)", async () => {
    const who = await sandboxHuman();
    const control = await open({ svcUserId: who });
    const token = vpToken(
      presentation({ ...honest, key: holder.privateKey, nonce: control.nonce, aud: control.aud, iat: seconds() }),
    );
    expect(await submit(control.id, token)).toEqual(expect.objectContaining({ accepted: true }));
    const kept = await account.sql(
      `select source, threshold, result, birth_date from age_evidence where svc_user_id = $1 order by threshold`,
      [who],
    );
    expect(kept).toEqual([
      { source: "sd-jwt-vc", threshold: 21, result: "over", birth_date: null },
      { source: "sd-jwt-vc", threshold: 65, result: "under", birth_date: null },
    ]);

    // A replay: the accepted presentation again, to the same request and to a new one.
    expect(await submit(control.id, token)).toMatchObject({ accepted: false, reason: "already_answered" });
    const again = await open({ svcUserId: who });
    await expectRefused(again.id, token, "wrong_nonce");
  });

  describe("each refused for its own reason", () => {
    beforeAll(async () => {
      request = await open({ svcUserId });
    });

    it("a wrong nonce", async () => {
      await expectRefused(request.id, present({ nonce: `${request.nonce}x` }), "wrong_nonce");
    });

    it("a wrong audience", async () => {
      await expectRefused(request.id, present({ aud: "https://attacker.example" }), "wrong_audience");
    });

    it("a KB-JWT made long ago", async () => {
      await expectRefused(request.id, present({ iat: seconds() - 3600 }), "stale_key_binding");
    });

    it("a revoked credential (status list)", async () => {
      const revoked = await credential(holder, { revoked: true });
      await expectRefused(request.id, present(revoked), "revoked_credential");
    });

    it("an untrusted issuer", async () => {
      const untrusted = await credential(holder, { issuer: "untrusted" });
      await expectRefused(request.id, present(untrusted), "untrusted_issuer");
    });

    it("alg: none", async () => {
      const unsigned = withHeader(honest.issuerJwt, { alg: "none", typ: "dc+sd-jwt" });
      await expectRefused(request.id, present({ issuerJwt: unsigned }), "unsupported_algorithm");
    });

    it("a payload changed under the issuer's signature", async () => {
      const longer = withPayload(honest.issuerJwt, { exp: seconds() + 100 * 365 * 86_400 });
      await expectRefused(request.id, present({ issuerJwt: longer }), "bad_issuer_signature");
    });

    it("a tampered disclosure (under 65 turned into over 65)", async () => {
      const disclosures = honest.disclosures.map((d) => (disclosedName(d) === "65" ? withValue(d, true) : d));
      await expectRefused(request.id, present({ disclosures }), "tampered_disclosure");
    });

    it("a duplicated disclosure", async () => {
      const [first = ""] = honest.disclosures;
      await expectRefused(request.id, present({ disclosures: [...honest.disclosures, first] }), "duplicate_disclosure");
    });

    it("a missing KB-JWT", async () => {
      await expectRefused(request.id, present({ key: null }), "missing_key_binding");
    });

    it("a holder key that does not match cnf", async () => {
      await expectRefused(request.id, present({ key: newHolder().privateKey }), "holder_key_mismatch");
    });

    it("a KB-JWT over other disclosures than those presented (sd_hash)", async () => {
      const [first = ""] = honest.disclosures;
      await expectRefused(request.id, present({ sdHashOver: [first] }), "key_binding_mismatch");
    });

    it("no age claim disclosed", async () => {
      await expectRefused(request.id, present({ disclosures: [] }), "claim_missing");
    });

    it("a claim for another threshold, alone or beside the asked one", async () => {
      const gateRequest = await open({ requestId: `req_${"0".repeat(31)}1`, threshold: 18 });
      const named = (name: string) => honest.disclosures.filter((d) => disclosedName(d) === name);
      const at = (disclosures: string[]) =>
        vpToken(
          presentation({
            issuerJwt: honest.issuerJwt,
            disclosures,
            key: holder.privateKey,
            nonce: gateRequest.nonce,
            aud: gateRequest.aud,
            iat: seconds(),
          }),
        );
      await expectRefused(gateRequest.id, at(named("21")), "claim_not_asked");
      await expectRefused(gateRequest.id, at([...named("18"), ...named("21")]), "claim_not_asked");
    });

    it("an oversized vp_token", async () => {
      await expectRefused(request.id, vpToken(`${present()}~${"A".repeat(40 * 1024)}`), "malformed_presentation");
    });

    it("a garbage vp_token, and a vp_token for another credential id", async () => {
      await expectRefused(request.id, "\u0000garbage{", "malformed_presentation");
      await expectRefused(
        request.id,
        JSON.stringify({ pid: [JSON.parse(present()).age[0]] }),
        "malformed_presentation",
      );
    });

    it("a state that is not this request's", async () => {
      await expectRefused(request.id, present(), "malformed_presentation", "apr_0");
    });

    it("an expired credential", async () => {
      clock.set(new Date(start.getTime() + 366 * 86_400_000));
      try {
        const late = await open({ svcUserId });
        await expectRefused(late.id, present({ nonce: late.nonce }), "expired_credential");
      } finally {
        clock.set(start);
      }
    });

    it("after every refusal the same request still takes the honest presentation", async () => {
      expect(await evidenceRows()).toBe(2);
      expect(await submit(request.id, present())).toMatchObject({ accepted: true });
      expect(await evidenceRows()).toBe(4);
    });
  });
});

describe("hostile mdoc presentations", () => {
  const device = newHolder();
  const allAges = ["age_over_12", "age_over_14", "age_over_16", "age_over_18", "age_over_21", "age_over_65"];
  let honest: string;
  let svcUserId: string;
  let request: Awaited<ReturnType<typeof open>>;
  const transcript = (of: Awaited<ReturnType<typeof open>>) => ({
    clientId: of.aud,
    nonce: of.nonce,
    responseUri: of.responseUri,
  });
  /** The honest DeviceResponse for `request`, with `change` applied to its parts. */
  const present = async (change: Partial<Parameters<typeof deviceResponse>[0]> = {}) =>
    mdocVpToken(
      await deviceResponse({
        mdoc: honest,
        elements: allAges,
        key: device.privateKey,
        transcript: transcript(request),
        ...change,
      }),
    );

  beforeAll(async () => {
    honest = await mdocCredential(device);
    svcUserId = await sandboxHuman();
    request = await open({ svcUserId });
  });

  it("the honest presentation is accepted and kept as verdicts only, source mdoc (the control)", async () => {
    const who = await sandboxHuman();
    const control = await open({ svcUserId: who });
    const token = mdocVpToken(
      await deviceResponse({
        mdoc: honest,
        elements: allAges,
        key: device.privateKey,
        transcript: transcript(control),
      }),
    );
    expect(await submit(control.id, token)).toEqual(expect.objectContaining({ accepted: true }));
    const kept = await account.sql(
      `select source, issuer, threshold, result, birth_date from age_evidence where svc_user_id = $1 order by threshold`,
      [who],
    );
    expect(kept).toEqual([
      {
        source: "mdoc",
        issuer: "https://wallet-issuer.development.invalid",
        threshold: 21,
        result: "over",
        birth_date: null,
      },
      {
        source: "mdoc",
        issuer: "https://wallet-issuer.development.invalid",
        threshold: 65,
        result: "under",
        birth_date: null,
      },
    ]);
    expect(await submit(control.id, token)).toMatchObject({ accepted: false, reason: "already_answered" });
  });

  it("a bad device signature (a key other than the MSO's device key)", async () => {
    await expectRefused(request.id, await present({ key: newHolder().privateKey }), "bad_device_signature");
  });

  it("a device signature over another request's nonce (the mdoc carries no nonce: its transcript does not verify)", async () => {
    const other = { ...transcript(request), nonce: `${request.nonce}x` };
    await expectRefused(request.id, await present({ transcript: other }), "bad_device_signature");
  });

  it("a device signature for another verifier (client_id) or response_uri", async () => {
    await expectRefused(
      request.id,
      await present({ transcript: { ...transcript(request), clientId: "https://attacker.example" } }),
      "bad_device_signature",
    );
    await expectRefused(
      request.id,
      await present({ transcript: { ...transcript(request), responseUri: "https://attacker.example/r" } }),
      "bad_device_signature",
    );
  });

  it("a tampered issuer-signed item (under 65 turned into over 65: its digest is not the signed one)", async () => {
    const tampered = withElementValue(honest, "age_over_65", true);
    await expectRefused(request.id, await present({ mdoc: tampered }), "tampered_disclosure");
  });

  it("a revoked mdoc (its MSO's status list entry, a CWT status list)", async () => {
    const revoked = await mdocCredential(device, "development", true);
    await expectRefused(request.id, await present({ mdoc: revoked }), "revoked_credential");
  });

  it("an mdoc whose IACA root no trust list holds", async () => {
    const untrusted = await mdocCredential(device, "untrusted");
    await expectRefused(request.id, await present({ mdoc: untrusted }), "untrusted_issuer");
  });

  it("an expired MSO (validUntil before our clock)", async () => {
    clock.set(new Date(start.getTime() + 366 * 86_400_000));
    try {
      const late = await open({ svcUserId });
      await expectRefused(
        late.id,
        mdocVpToken(
          await deviceResponse({
            mdoc: honest,
            elements: allAges,
            key: device.privateKey,
            transcript: transcript(late),
          }),
        ),
        "expired_credential",
      );
    } finally {
      clock.set(start);
    }
  });

  it("an MSO not yet valid (validFrom after our clock)", async () => {
    clock.set(new Date(start.getTime() - 86_400_000));
    try {
      const early = await open({ svcUserId });
      await expectRefused(
        early.id,
        mdocVpToken(
          await deviceResponse({
            mdoc: honest,
            elements: allAges,
            key: device.privateKey,
            transcript: transcript(early),
          }),
        ),
        "credential_not_yet_valid",
      );
    } finally {
      clock.set(start);
    }
  });

  it("a claim for another threshold, alone or beside the asked one", async () => {
    const gateRequest = await open({ requestId: `req_${"0".repeat(31)}2`, threshold: 18 });
    const at = async (elements: string[]) =>
      mdocVpToken(
        await deviceResponse({ mdoc: honest, elements, key: device.privateKey, transcript: transcript(gateRequest) }),
      );
    await expectRefused(gateRequest.id, await at(["age_over_21"]), "claim_not_asked");
    await expectRefused(gateRequest.id, await at(["age_over_18", "age_over_21"]), "claim_not_asked");
    await expectRefused(gateRequest.id, await at([]), "claim_missing");
  });

  it("garbage CBOR, a DeviceResponse that is not one, and an oversized one", async () => {
    const garbage = (bytes: Buffer) => mdocVpToken(bytes.toString("base64url"));
    await expectRefused(request.id, garbage(Buffer.from("not cbor at all")), "malformed_presentation");
    await expectRefused(request.id, garbage(Buffer.from([0x9f, 0x9f, 0x9f, 0x9f])), "malformed_presentation");
    // A CBOR map with no documents, and an array nested far deeper than any mdoc.
    await expectRefused(request.id, garbage(Buffer.from([0xa1, 0x61, 0x76, 0x01])), "malformed_presentation");
    await expectRefused(request.id, garbage(Buffer.alloc(20_000, 0x81)), "malformed_presentation");
    await expectRefused(request.id, mdocVpToken("A".repeat(40 * 1024)), "malformed_presentation");
    await expectRefused(
      request.id,
      JSON.stringify({ age_mdoc: [await present(), "second"] }),
      "malformed_presentation",
    );
  });

  it("an EU age verification mdoc answers its own query (age_av), and only that one", async () => {
    const av = await mdocCredential(device, "development", false, "mdoc-av");
    const avResponse = (of: Awaited<ReturnType<typeof open>>) =>
      deviceResponse({
        mdoc: av,
        elements: allAges,
        key: device.privateKey,
        transcript: transcript(of),
        type: euAgeVerification,
      });
    // Under the mDL's id it is not the type asked for; an mDL under the age_av id neither.
    await expectRefused(request.id, mdocVpToken(await avResponse(request)), "credential_type_not_accepted");
    await expectRefused(
      request.id,
      mdocVpToken(JSON.parse(await present()).age_mdoc[0], "age_av"),
      "credential_type_not_accepted",
    );

    const who = await sandboxHuman();
    const own = await open({ svcUserId: who });
    expect(await submit(own.id, mdocVpToken(await avResponse(own), "age_av"))).toMatchObject({ accepted: true });
    const kept = await account.sql(
      `select source, issuer, threshold, result from age_evidence where svc_user_id = $1 order by threshold`,
      [who],
    );
    expect(kept).toEqual([
      { source: "mdoc", issuer: "https://wallet-issuer.development.invalid", threshold: 21, result: "over" },
      { source: "mdoc", issuer: "https://wallet-issuer.development.invalid", threshold: 65, result: "under" },
    ]);
  });

  it("after every refusal the same request still takes the honest presentation", async () => {
    expect(await submit(request.id, await present())).toMatchObject({ accepted: true });
  });
});
