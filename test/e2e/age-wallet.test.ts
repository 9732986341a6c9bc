import { createClient } from "@connectrpc/connect";
import { AccountConsoleService } from "@svc/proto/account/v1/account_pb.js";
import { createRemoteJWKSet, jwtVerify } from "jose";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runSvcctl } from "../harness/svcctl.ts";
import { startTestMesh, type TestMesh } from "../harness/test-mesh.ts";
import {
  credentialParts,
  disclosedName,
  jwtPayload,
  newHolder,
  presentation,
  vpToken,
} from "../harness/wallet-holder.ts";
import { issuer, newGate, newPartner, partnerApi, result, signedInPerson } from "./gate-support.ts";

/**
 * Age from a wallet credential, end to end through the gateway: an Age Gate request opens a
 * presentation step (OpenID4VP request_uri), the development wallet (svcctl) answers it by
 * direct_post, and the passkey confirmation then carries only over or under to the partner.
 */
/** Birth dates only the wallet is given: none may reach the database. */
const walletOnlyBirthDate = "1996-05-17";
const birthDates = {
  "sd-jwt-vc": { 30: "1996-01-15", 15: "2011-01-15" },
  mdoc: { 30: "1996-03-09", 15: "2011-03-09" },
  "mdoc-av": { 30: "1996-04-21", 15: "2011-04-21" },
};
const walletBirthDates = [...Object.values(birthDates).flatMap((d) => [d[30], d[15]]), walletOnlyBirthDate];

describe("age from a wallet credential (SD-JWT VC and mdoc)", () => {
  let mesh: TestMesh;
  let api: ReturnType<typeof partnerApi>;
  let partner: Awaited<ReturnType<typeof newPartner>>;
  let origin: string;

  beforeAll(async () => {
    mesh = await startTestMesh("age_wallet", { only: ["signing", "account", "gate"] });
    // The wallet fetches the request_uri and posts to the response_uri: they must be this gateway's.
    origin = mesh.gatewayUrl;
    await mesh.restart("gateway", { GATEWAY_PUBLIC_ORIGIN: origin });
    // svcctl proves an age ahead of time through the app API there.
    process.env.SVCCTL_API_URL = origin;
    api = partnerApi(mesh);
    partner = await newPartner(mesh, "Adults only");
    await newGate(mesh, partner.organizationId, { key: "adults", age: 18 });
  });
  afterAll(async () => {
    await mesh?.stop();
  });

  const person = () => signedInPerson(mesh, origin);

  async function ageRequest() {
    const grant = result(await api.post("/sdk/create-session", {}, partner.devSecret)).anchor_grant_token;
    const link = result(await api.post("/sdk/create-verification-link", { gate: "adults" }, grant));
    return { requestId: link.request_id as string, t: decodeURIComponent(new URL(link.web_url).hash.slice(3)) };
  }

  const wallet = async (args: string[]) => {
    const run = await runSvcctl(mesh, ["wallet", "present", ...args]);
    expect(run.code, run.stderr).toBe(0);
    return JSON.parse(run.stdout) as { accepted: boolean; reason?: string };
  };

  async function confirm(who: Awaited<ReturnType<typeof person>>, requestId: string, t: string) {
    const opened = result(await who.app("/requests/open", { request_id: requestId, t, origin }));
    const confirmed = result(
      await who.app("/requests/confirm", {
        request_id: requestId,
        t,
        ceremony_id: opened.ceremony_id,
        response: who.authenticator.assert(opened.options, origin),
      }),
    );
    const record = result(await api.get("/verification/status", { request_id: requestId }, partner.devSecret), true);
    return { confirmed, record };
  }

  // mdoc-av: the EU age verification attestation (doctype and namespace eu.europa.ec.av.1).
  for (const c of (["sd-jwt-vc", "mdoc", "mdoc-av"] as const).flatMap((format) => [
    { format, birthdate: birthDates[format][30], issuer: "development", verdict: "over", claim: true },
    { format, birthdate: birthDates[format][15], issuer: "development", verdict: "under", claim: false },
    { format, birthdate: birthDates[format][30], issuer: "untrusted", verdict: "unavailable", claim: null },
  ]))
    it(`in the request: ${c.format} of ${c.birthdate} from the ${c.issuer} issuer reads ${c.verdict}`, async () => {
      const who = await person();
      const { requestId, t } = await ageRequest();
      const opened = result(await who.app("/requests/open", { request_id: requestId, t, origin }));
      expect(opened.age_presentation).toMatchObject({ needed: true });
      expect(opened.age_presentation.request_uri).toMatch(new RegExp(`^${origin}/wallet/requests/apr_[0-9a-f]{32}$`));

      const answer = await wallet([
        "--human",
        who.svcUserId,
        "--birthdate",
        c.birthdate,
        "--request",
        requestId,
        "--issuer",
        c.issuer,
        "--format",
        c.format,
      ]);
      expect(answer).toEqual(
        c.issuer === "development" ? { accepted: true } : { accepted: false, reason: "untrusted_issuer" },
      );

      const { confirmed, record } = await confirm(who, requestId, t);
      expect(record.age_verdict).toBe(c.verdict);
      expect(confirmed.status).toBe("completed");
      const keySet = createRemoteJWKSet(new URL(`${origin}/.well-known/jwks.json`));
      const { payload } = await jwtVerify(record.token, keySet, { issuer });
      expect(payload.age_over).toBe(c.claim);
    });

  it("ahead of time: the EU PID thresholds are proven once, and a later Age Gate at 18 finishes without a presentation", async () => {
    const who = await person();
    const started = result(await who.app("/age/prove"));
    expect(started.request_uri).toMatch(/\/wallet\/requests\/apr_[0-9a-f]{32}$/);
    const request = await fetch(started.request_uri);
    expect(request.headers.get("content-type")).toBe("application/oauth-authz-req+jwt");
    const claims = JSON.parse(Buffer.from((await request.text()).split(".")[1]!, "base64url").toString());
    expect(claims).toMatchObject({ response_mode: "direct_post", response_type: "vp_token" });
    // The client is the account service's certificate (x509_hash); the request and response URIs are the gateway's.
    expect(claims.client_id).toMatch(/^x509_hash:[A-Za-z0-9_-]{43}$/);
    expect(claims.response_uri).toBe(started.request_uri.replace("/wallet/requests/", "/wallet/responses/"));
    const qr = await (await fetch(started.qr_code_url)).text();
    expect(qr).toContain("<svg");
    expect(claims.dcql_query.credentials[0].claims.map((c: { path: string[] }) => c.path[1])).toEqual([
      "12",
      "14",
      "16",
      "18",
      "21",
      "65",
    ]);
    // Any one answers: an SD-JWT VC, or an mDL or EU age verification mdoc with the same thresholds as age_over_NN.
    expect(claims.dcql_query.credentials[1]).toMatchObject({
      id: "age_mdoc",
      format: "mso_mdoc",
      meta: { doctype_value: "org.iso.18013.5.1.mDL" },
    });
    expect(claims.dcql_query.credentials[1].claims.map((c: { path: string[] }) => c.path)).toEqual(
      [12, 14, 16, 18, 21, 65].map((t) => ["org.iso.18013.5.1", `age_over_${t}`]),
    );
    expect(claims.dcql_query.credentials[2]).toMatchObject({
      id: "age_av",
      format: "mso_mdoc",
      meta: { doctype_value: "eu.europa.ec.av.1" },
    });
    expect(claims.dcql_query.credentials[2].claims.map((c: { path: string[] }) => c.path)).toEqual(
      [12, 14, 16, 18, 21, 65].map((t) => ["eu.europa.ec.av.1", `age_over_${t}`]),
    );
    expect(claims.dcql_query.credential_sets).toEqual([{ options: [["age"], ["age_mdoc"], ["age_av"]] }]);

    const sandbox = await runSvcctl(mesh, ["human", "create", "--env", "development"]);
    const human = JSON.parse(sandbox.stdout).svc_user_id as string;
    expect(await wallet(["--human", human, "--birthdate", "1996-01-15"])).toEqual({ accepted: true });
    const { requestId, t } = await ageRequest();
    // The sandbox human answers as it behaves; its evidence now comes from the wallet only.
    const session = JSON.parse((await runSvcctl(mesh, ["human", "session", "--human", human])).stdout);
    const opened = result(
      await api.post("/app/requests/open", { request_id: requestId, t, origin }, session.session_token),
    );
    expect(opened.age_presentation).toEqual({ needed: false });
  });

  for (const c of (["sd-jwt-vc", "mdoc"] as const).flatMap((format) => [
    { format, age: 30 as const, verdict: "over", claim: true },
    { format, age: 15 as const, verdict: "under", claim: false },
  ]))
    it(`ahead of time: ${c.format} at ${c.age}, and a later Age Gate at 18 reads ${c.verdict} with no presentation step`, async () => {
      const who = await person();
      expect(
        await wallet(["--human", who.svcUserId, "--birthdate", birthDates[c.format][c.age], "--format", c.format]),
      ).toEqual({ accepted: true });
      const { requestId, t } = await ageRequest();
      const opened = result(await who.app("/requests/open", { request_id: requestId, t, origin }));
      expect(opened.age_presentation).toEqual({ needed: false });
      const { confirmed, record } = await confirm(who, requestId, t);
      expect(confirmed.status).toBe("completed");
      expect(record.age_verdict).toBe(c.verdict);
      const keySet = createRemoteJWKSet(new URL(`${origin}/.well-known/jwks.json`));
      const { payload } = await jwtVerify(record.token, keySet, { issuer });
      expect(payload.age_over).toBe(c.claim);
    });

  it("through direct_post: a wrong nonce, an oversized, a garbage and a mistyped body are refused; the request stays pending and then takes the honest answer once", async () => {
    const who = await person();
    const { requestId, t } = await ageRequest();
    const opened = result(await who.app("/requests/open", { request_id: requestId, t, origin }));
    const requestUri = opened.age_presentation.request_uri as string;
    const request = jwtPayload(await (await fetch(requestUri)).text());
    const holder = newHolder();
    const accountConsole = createClient(AccountConsoleService, mesh.consoleTransport());
    const { issuerJwt, disclosures } = credentialParts(
      (
        await accountConsole.issueDevAgeCredential({
          birthDate: walletOnlyBirthDate,
          holderJwk: holder.jwk,
          issuer: "development",
        })
      ).credential,
    );
    const answer = (nonce: string) =>
      new URLSearchParams({
        vp_token: vpToken(
          presentation({
            issuerJwt,
            disclosures: disclosures.filter((d) => disclosedName(d) === "18"),
            key: holder.privateKey,
            nonce,
            aud: String(request.client_id),
            iat: Number(request.iat),
          }),
        ),
        state: String(request.state),
      }).toString();
    const post = async (body: string, contentType = "application/x-www-form-urlencoded") => {
      const response = await fetch(String(request.response_uri), {
        method: "POST",
        headers: { "content-type": contentType },
        body,
      });
      return { status: response.status, body: await response.json() };
    };
    const refused = (description: string) => ({
      status: 400,
      body: { error: "invalid_request", error_description: description },
    });

    expect(await post(answer(`${request.nonce}x`))).toEqual(refused("wrong_nonce"));
    const oversized = await post(`${answer(String(request.nonce))}&pad=${"A".repeat(64 * 1024)}`);
    expect(oversized.status).toBe(413);
    expect(await post("\u0000%%garbage")).toEqual(refused("vp_token and state are each sent once"));
    expect(await post(`vp_token=garbage&state=${request.state}`)).toEqual(refused("malformed_presentation"));
    const garbageMdoc = JSON.stringify({ age_mdoc: [Buffer.from([0x9f, 0x9f, 0x9f, 0x9f]).toString("base64url")] });
    expect(await post(new URLSearchParams({ vp_token: garbageMdoc, state: String(request.state) }).toString())).toEqual(
      refused("malformed_presentation"),
    );
    expect(await post(answer(String(request.nonce)), "application/json")).toEqual(
      refused("the response is posted as application/x-www-form-urlencoded"),
    );
    // Still pending: the same request_uri is served, and opening the request again offers it again.
    expect((await fetch(requestUri)).status).toBe(200);
    const reopened = result(await who.app("/requests/open", { request_id: requestId, t, origin }));
    expect(reopened.age_presentation).toMatchObject({ needed: true, request_uri: requestUri });

    const honest = answer(String(request.nonce));
    expect(await post(honest)).toEqual({ status: 200, body: {} });
    expect(await post(honest)).toEqual(refused("already_answered"));
    const { record } = await confirm(who, requestId, t);
    expect(record.age_verdict).toBe("over");
  });

  it("a database dump after these flows holds no birth date given to the wallet", async () => {
    const db = new pg.Client({ connectionString: mesh.env.SVC_DATABASE_URL });
    await db.connect();
    try {
      const tables = await db.query<{ schema: string; name: string }>(
        `select table_schema as schema, table_name as name from information_schema.tables
         where table_type = 'BASE TABLE' and table_schema not in ('pg_catalog', 'information_schema')`,
      );
      const rows: string[] = [];
      for (const { schema, name } of tables.rows) {
        const dumped = await db.query<{ row: string }>(
          `select row_to_json(t)::text as row from "${schema}"."${name}" t`,
        );
        rows.push(...dumped.rows.map((r) => r.row));
      }
      const dump = rows.join("\n");
      // The dump reaches the wallet's evidence and presentations (so a birth date there would be seen).
      expect(dump).toContain('"source":"sd-jwt-vc"');
      expect(dump).toContain('"source":"mdoc"');
      expect(dump).toContain('"state":"accepted"');
      for (const birthDate of walletBirthDates) {
        expect(dump).not.toContain(birthDate);
        expect(dump).not.toContain(birthDate.replaceAll("-", ""));
      }
    } finally {
      await db.end();
    }
  });
});
