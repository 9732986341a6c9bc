import { createHash, verify, X509Certificate } from "node:crypto";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import {
  createLogger,
  deleteDue,
  deleteDueBatch,
  dueBatchStatement,
  ManualClock,
  openDatabase,
  openStatementPool,
} from "@svc/platform";
import { AgeVerdict, SandboxBehavior } from "@svc/proto/account/v1/account_pb.js";
import { Environment } from "@svc/proto/common/v1/caller_pb.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { planOf } from "../../../test/harness/plans.ts";
import {
  credentialParts,
  disclosedName,
  jwtPayload,
  newHolder,
  presentation,
  vpToken,
} from "../../../test/harness/wallet-holder.ts";
import { AgeEvidence } from "../src/age/age-evidence.entity.ts";
import { presentationRetentionRule } from "../src/age/wallet/presentations.ts";
import { migrations } from "../src/migrations/index.ts";
import { startTestAccount, type TestAccount } from "./support/account.ts";

const clock = new ManualClock("2026-11-22T10:00:00Z");
const clientId = "https://verify.example";
let account: TestAccount;

beforeAll(async () => {
  account = await startTestAccount("account_age_wallet", { clock });
});
afterAll(() => account?.stop());

const sandboxHuman = async () =>
  (
    await account.console.createSandboxHuman({
      environment: Environment.DEVELOPMENT,
      behavior: SandboxBehavior.CONFIRM,
    })
  ).svcUserId;

describe("wallet presentations", () => {
  it("start ahead of time with the EU PID thresholds", async () => {
    const started = await account.client.startAgePresentation({ svcUserId: await sandboxHuman(), clientId });
    expect(started.requestUri).toMatch(/^https:\/\/verify\.example\/wallet\/requests\/apr_/);
  });

  it("sign their request objects for the x509_hash client identifier: the x5c leaf hashes to client_id and verifies the JWS", async () => {
    const started = await account.client.startAgePresentation({ svcUserId: await sandboxHuman(), clientId });
    for (const dcApiOrigin of ["", clientId]) {
      const answer = await account.client.getAgePresentationRequestObject({
        presentationId: started.presentationId,
        dcApiOrigin,
      });
      const [header = "", payload = "", signature = ""] = answer.requestObject.split(".");
      const decoded = JSON.parse(Buffer.from(header, "base64url").toString()) as { x5c: string[]; jwk?: unknown };
      expect(decoded).not.toHaveProperty("jwk");
      const leaf = Buffer.from(decoded.x5c[0] ?? "", "base64");
      const hash = createHash("sha256").update(leaf).digest("base64url");
      expect(answer.clientId).toBe(`x509_hash:${hash}`);
      expect(jwtPayload(answer.requestObject)).toMatchObject({ client_id: answer.clientId, iss: answer.clientId });
      const key = new X509Certificate(leaf).publicKey;
      const signed = Buffer.from(`${header}.${payload}`);
      expect(verify("sha256", signed, { key, dsaEncoding: "ieee-p1363" }, Buffer.from(signature, "base64url"))).toBe(
        true,
      );
    }
  });
});

describe("the retention of old presentations", () => {
  /** A presentation wallet-side lifetime: 10 minutes from its start. */
  const lifetimeMs = 10 * 60_000;
  /** ACCOUNT_PRESENTATION_RETENTION's default. */
  const presentationRetentionMs = 60 * 60_000;
  const holder = newHolder();
  let orm: Awaited<ReturnType<typeof openDatabase>>;

  beforeAll(async () => {
    orm = await openDatabase({
      url: account.database.url,
      schema: "account",
      entities: [AgeEvidence],
      migrations,
      logger: createLogger("presentation-sweep-test", {}, "error"),
    });
  });
  afterAll(() => orm?.close());

  const rule = () => presentationRetentionRule(clock.now(), presentationRetentionMs);
  const sweep = (batchSize = 1000) => deleteDue(orm, rule(), batchSize);
  const presentationIds = async () =>
    (await account.sql<{ id: string }>(`select id from age_presentation order by id`)).map((row) => row.id);

  /** Starts a presentation and, when `answer` says so, answers it honestly with the asked claims. */
  async function presentationOf(
    target: { svcUserId: string } | { requestId: string; threshold: number },
    answer = false,
  ) {
    const started = await account.client.startAgePresentation({ ...target, clientId });
    if (!answer) return started.presentationId;
    const { requestObject } = await account.client.getAgePresentationRequestObject({
      presentationId: started.presentationId,
    });
    const request = jwtPayload(requestObject);
    const asked = (
      request.dcql_query as { credentials: { claims: { path: string[] }[] }[] }
    ).credentials[0]?.claims.map((claim) => claim.path[1]);
    const { credential } = await account.console.issueDevAgeCredential({
      birthDate: "1996-05-17",
      holderJwk: holder.jwk,
      issuer: "development",
    });
    const { issuerJwt, disclosures } = credentialParts(credential);
    const submitted = await account.client.submitAgePresentation({
      presentationId: started.presentationId,
      state: started.presentationId,
      vpToken: vpToken(
        presentation({
          issuerJwt,
          disclosures: disclosures.filter((d) => asked?.includes(disclosedName(d))),
          key: holder.privateKey,
          nonce: String(request.nonce),
          aud: String(request.client_id),
          iat: Math.floor(clock.now().getTime() / 1000),
        }),
      ),
    });
    expect(submitted.accepted).toBe(true);
    return started.presentationId;
  }

  it("deletes pending and unconfirmed ones once an hour past their expiry has gone by, and keeps a human's", async () => {
    clock.set("2026-11-23T10:00:00Z");
    await sweep(); // what earlier tests left, so the counts below are this test's own
    const start = clock.now();
    const human = await sandboxHuman();
    const confirmer = await sandboxHuman();
    const pendingAhead = await presentationOf({ svcUserId: human });
    const pendingForRequest = await presentationOf({ requestId: `req_${"a".repeat(32)}`, threshold: 18 });
    const unconfirmed = await presentationOf({ requestId: `req_${"b".repeat(32)}`, threshold: 18 }, true);
    const acceptedAhead = await presentationOf({ svcUserId: human }, true);
    const claimedRequest = `req_${"c".repeat(32)}`;
    const claimed = await presentationOf({ requestId: claimedRequest, threshold: 18 }, true);
    const confirmed = await account.client.evaluateAge({
      svcUserId: confirmer,
      threshold: 18,
      at: timestampFromDate(clock.now()),
      requestId: claimedRequest,
    });
    expect(confirmed.source).toBe("sd-jwt-vc");

    const boundary = start.getTime() + lifetimeMs + presentationRetentionMs;
    clock.set(new Date(boundary));
    expect(await sweep()).toBe(0);
    expect(await presentationIds()).toEqual(
      [pendingAhead, pendingForRequest, unconfirmed, acceptedAhead, claimed].sort(),
    );

    clock.set(new Date(boundary + 1));
    expect(await sweep()).toBe(3);
    expect(await presentationIds()).toEqual([acceptedAhead, claimed].sort());
    // The verdicts already kept as evidence are not the sweep's: both humans still read over.
    for (const svcUserId of [human, confirmer]) {
      const kept = await account.client.evaluateAge({ svcUserId, threshold: 18, at: timestampFromDate(clock.now()) });
      expect(kept).toMatchObject({ verdict: AgeVerdict.OVER, source: "sd-jwt-vc" });
    }
  });

  it("deletes in batches of ACCOUNT_RETENTION_BATCH until one comes back short", async () => {
    clock.set("2026-11-25T10:00:00Z");
    await sweep();
    const human = await sandboxHuman();
    for (let i = 0; i < 45; i += 1) await presentationOf({ svcUserId: human });
    clock.advance(lifetimeMs + presentationRetentionMs + 1);
    const left = async () =>
      (await account.sql(`select id from age_presentation where svc_user_id = $1`, [human])).length;
    expect(await deleteDueBatch(orm, rule(), 2)).toBe(2);
    expect(await left()).toBe(43);
    expect(await sweep(2)).toBe(43);
    expect(await left()).toBe(0);
  });

  it("reads only what it may delete, oldest first on age_presentation_due, past the presentations humans keep", async () => {
    clock.set("2026-11-26T10:00:00Z");
    const human = await sandboxHuman();
    const longAgo = new Date(clock.now().getTime() - 2 * lifetimeMs - 2 * presentationRetentionMs);
    await account.sql(
      `insert into age_presentation (id, svc_user_id, thresholds, nonce, client_id, state, source, created_at, expires_at)
       select 'kept' || g, $1, '{18}', 'n', 'c', 'accepted', 'sd-jwt-vc', $2, $2 from generate_series(1, 20000) g`,
      [human, longAgo],
    );
    await account.sql(
      `insert into age_presentation (id, request_id, thresholds, nonce, client_id, state, created_at, expires_at)
       select 'due' || g, 'req_' || g, '{18}', 'n', 'c', 'pending', $1, $1 from generate_series(1, 2000) g`,
      [longAgo],
    );
    await account.sql("analyze age_presentation");
    const statements = openStatementPool({
      url: account.database.url,
      schema: "account",
      max: 1,
      logger: createLogger("presentation-plan-test", {}, "error"),
    });
    try {
      const plan = await planOf(statements, dueBatchStatement(rule()), [rule().before, 1000]);
      expect(plan, plan).not.toContain("Seq Scan");
      expect(plan, plan).not.toContain("Bitmap");
      expect(plan, plan).toContain("age_presentation_due");
    } finally {
      await statements.end();
    }
    expect(await sweep()).toBe(2000);
  });
});
