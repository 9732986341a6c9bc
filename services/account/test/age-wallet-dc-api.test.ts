import { Code } from "@connectrpc/connect";
import { ManualClock } from "@svc/platform";
import { SandboxBehavior } from "@svc/proto/account/v1/account_pb.js";
import { Environment } from "@svc/proto/common/v1/caller_pb.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { deviceResponse, mdocVpToken, type Transcript } from "../../../test/harness/mdoc-holder.ts";
import { credentialParts, jwtPayload, newHolder, presentation, vpToken } from "../../../test/harness/wallet-holder.ts";
import { refusal, startTestAccount, type TestAccount } from "./support/account.ts";

/**
 * The same presentation through the Digital Credentials API (OpenID4VP 1.0 Appendix A): a signed
 * request with `response_mode` `dc_api` and the page's origin as `expected_origins`, and an answer
 * bound to that origin (a KB-JWT `aud` of `origin:<origin>`, the mdoc's OpenID4VPDCAPIHandover). An
 * answer made for the redirect (`direct_post`) binding is refused on the DC API path and the other
 * way round, each storing nothing.
 */
const clock = new ManualClock(new Date("2026-11-22T10:00:00Z"));
const clientId = "https://verify.example";
const origin = "https://verify.example";
const birthDate = "1996-05-17";
const allAges = ["age_over_12", "age_over_14", "age_over_16", "age_over_18", "age_over_21", "age_over_65"];
let account: TestAccount;

beforeAll(async () => {
  account = await startTestAccount("account_age_wallet_dc_api", { clock });
});
afterAll(() => account?.stop());

const seconds = () => Math.floor(clock.now().getTime() / 1000);

async function open() {
  const { svcUserId } = await account.console.createSandboxHuman({
    environment: Environment.DEVELOPMENT,
    behavior: SandboxBehavior.CONFIRM,
  });
  const started = await account.client.startAgePresentation({ svcUserId, clientId });
  const redirect = jwtPayload(
    (await account.client.getAgePresentationRequestObject({ presentationId: started.presentationId })).requestObject,
  );
  const dcApi = jwtPayload(
    (
      await account.client.getAgePresentationRequestObject({
        presentationId: started.presentationId,
        dcApiOrigin: origin,
      })
    ).requestObject,
  );
  return { id: started.presentationId, svcUserId, redirect, dcApi };
}

const evidence = async (svcUserId: string) =>
  Number(
    (await account.sql<{ n: string }>(`select count(*) as n from age_evidence where svc_user_id = $1`, [svcUserId]))[0]
      ?.n,
  );

const submitDcApi = (id: string, token: string, dcApiOrigin = origin) =>
  account.client.submitAgePresentation({ presentationId: id, vpToken: token, dcApiOrigin });
const submitDirectPost = (id: string, token: string) =>
  account.client.submitAgePresentation({ presentationId: id, vpToken: token, state: id });

describe("the Digital Credentials API request", () => {
  it("is signed, asks for the same claims with the same nonce and client_id, dc_api to the page's origin, no response_uri or state", async () => {
    const { id, redirect, dcApi } = await open();
    expect(redirect.client_id).toMatch(/^x509_hash:[A-Za-z0-9_-]{43}$/);
    expect(dcApi).toMatchObject({
      client_id: redirect.client_id,
      response_type: "vp_token",
      response_mode: "dc_api",
      expected_origins: [origin],
      nonce: redirect.nonce,
      dcql_query: redirect.dcql_query,
    });
    expect(dcApi).not.toHaveProperty("response_uri");
    expect(dcApi).not.toHaveProperty("state");
    expect(redirect).toMatchObject({ response_mode: "direct_post", state: id });
    expect(redirect).not.toHaveProperty("expected_origins");
  });

  it("refuses an origin that is not one", async () => {
    const { id } = await open();
    for (const dcApiOrigin of ["https://verify.example/path", "javascript:alert(1)"]) {
      const error = await refusal(account.client.getAgePresentationRequestObject({ presentationId: id, dcApiOrigin }));
      expect(error.code).toBe(Code.InvalidArgument);
    }
  });
});

describe("an SD-JWT VC through the DC API", () => {
  const holder = newHolder();
  let credential: { issuerJwt: string; disclosures: string[] };
  beforeAll(async () => {
    const issued = await account.console.issueDevAgeCredential({
      birthDate,
      holderJwk: holder.jwk,
      issuer: "development",
    });
    credential = credentialParts(issued.credential);
  });
  const answer = (nonce: unknown, aud: string) =>
    vpToken(presentation({ ...credential, key: holder.privateKey, nonce: String(nonce), aud, iat: seconds() }));

  it("bound to the redirect's audience (client_id) is refused on the DC API path, storing nothing", async () => {
    const { id, svcUserId, dcApi } = await open();
    expect(await submitDcApi(id, answer(dcApi.nonce, String(dcApi.client_id)))).toMatchObject({
      accepted: false,
      reason: "wrong_audience",
    });
    expect(await evidence(svcUserId)).toBe(0);
  });

  it("bound to origin:<origin> is refused by direct_post, and for another origin on the DC API path", async () => {
    const { id, svcUserId, dcApi } = await open();
    expect(await submitDirectPost(id, answer(dcApi.nonce, `origin:${origin}`))).toMatchObject({
      accepted: false,
      reason: "wrong_audience",
    });
    expect(await submitDcApi(id, answer(dcApi.nonce, "origin:https://attacker.example"))).toMatchObject({
      accepted: false,
      reason: "wrong_audience",
    });
    expect(await evidence(svcUserId)).toBe(0);
  });

  it("bound to origin:<origin> is accepted on the DC API path, and kept as verdicts only", async () => {
    const { id, svcUserId, dcApi } = await open();
    expect(await submitDcApi(id, answer(dcApi.nonce, `origin:${origin}`))).toMatchObject({ accepted: true });
    expect(await evidence(svcUserId)).toBe(2);
  });
});

describe("an mdoc through the DC API", () => {
  const device = newHolder();
  let mdoc: string;
  beforeAll(async () => {
    mdoc = (
      await account.console.issueDevAgeCredential({
        birthDate,
        holderJwk: device.jwk,
        issuer: "development",
        format: "mdoc",
      })
    ).credential;
  });
  const answer = async (transcript: Transcript) =>
    mdocVpToken(await deviceResponse({ mdoc, elements: allAges, key: device.privateKey, transcript }));

  it("signed over the redirect handover is refused on the DC API path, and the DC API handover by direct_post", async () => {
    const { id, svcUserId, redirect } = await open();
    const nonce = String(redirect.nonce);
    const redirectMade = await answer({
      clientId: String(redirect.client_id),
      nonce,
      responseUri: String(redirect.response_uri),
    });
    expect(await submitDcApi(id, redirectMade)).toMatchObject({ accepted: false, reason: "bad_device_signature" });
    expect(await submitDirectPost(id, await answer({ origin, nonce }))).toMatchObject({
      accepted: false,
      reason: "bad_device_signature",
    });
    expect(await submitDcApi(id, await answer({ origin: "https://attacker.example", nonce }))).toMatchObject({
      accepted: false,
      reason: "bad_device_signature",
    });
    expect(await evidence(svcUserId)).toBe(0);
    // The redirect-made answer still verifies where it belongs: the refusals above were for the binding.
    expect(await submitDirectPost(id, redirectMade)).toMatchObject({ accepted: true });
  });

  it("signed over the DC API handover of this origin and nonce is accepted on the DC API path", async () => {
    const { id, svcUserId, dcApi } = await open();
    expect(await submitDcApi(id, await answer({ origin, nonce: String(dcApi.nonce) }))).toMatchObject({
      accepted: true,
    });
    expect(await evidence(svcUserId)).toBe(2);
  });
});
