import { create } from "@bufbuild/protobuf";
import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import { ManualClock } from "@svc/platform";
import { SignAttestationRequestSchema, type VerifyTokenResponse } from "@svc/proto/signing/v1/signing_pb.js";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../../../test/harness/index.ts";
import { startTestSigning, testKek } from "./service-support.ts";

/** VerifyTokens against the real replay ledger: one multi-row write per call, the same rules as VerifyToken. */
describe("VerifyTokens", () => {
  let db: TestDatabase;
  let running: Awaited<ReturnType<typeof startTestSigning>>;
  // Only moved forward: a key is unpublished before the instant it was published.
  const clock = new ManualClock("2026-11-14T12:00:00Z");

  beforeAll(async () => {
    db = await createTestDatabase("signing_batch");
    running = await startTestSigning(db.url, { clock, env: { SIGNING_KEK: testKek() } });
  });
  afterAll(async () => {
    await running?.service.stop();
    await db?.drop();
  });

  let sequence = 0;
  const mint = async (fields: { audience?: string } = {}) => {
    const requestId = `req_${(++sequence).toString(16).padStart(32, "0")}`;
    const request = create(SignAttestationRequestSchema, {
      requestId,
      verified: true,
      organizationId: "org_a",
      verifiedAt: timestampFromDate(clock.now()),
      ...fields,
    });
    return (await running.client.signAttestation(request)).token;
  };
  const verifyAll = async (tokens: string[]) =>
    (await running.client.verifyTokens({ requests: tokens.map((token) => ({ token })) })).responses;
  const firstChecks = (responses: VerifyTokenResponse[]) =>
    responses.filter((response) => response.valid && !response.replayed).length;

  it("before 15 November 2026: answers in order; of copies in one call the first listed is first, the others valid but replayed", async () => {
    const [a, b] = [await mint(), await mint()];
    const responses = await verifyAll([a, b, a, "not-a-token", a]);
    expect(responses.map(({ valid, replayed, reason }) => ({ valid, replayed, reason }))).toEqual([
      { valid: true, replayed: false, reason: "" },
      { valid: true, replayed: false, reason: "" },
      { valid: true, replayed: true, reason: "" },
      { valid: false, replayed: false, reason: "malformed" },
      { valid: true, replayed: true, reason: "" },
    ]);
    expect(responses[1]!.claims).toEqual(JSON.parse(Buffer.from(b.split(".")[1]!, "base64url").toString()));
    expect(responses[3]!.claims).toBeUndefined();
    // The single RPC reads the same ledger.
    expect(await running.client.verifyToken({ token: b })).toMatchObject({ valid: true, replayed: true });
  });

  it("mixes valid and invalid answers, each as VerifyToken gives it, and records only the checks that passed", async () => {
    const expiring = await mint();
    const expiresAt = new Date(clock.now().getTime() + 120_000);
    clock.set(expiresAt);
    const [bound, unbound] = [await mint({ audience: "org_a" }), await mint()];
    const responses = await running.client.verifyTokens({
      requests: [
        { token: expiring },
        { token: bound, audience: "org_b" },
        { token: unbound, audience: "org_a" },
        { token: `${unbound}x` },
      ],
    });
    expect(responses.responses.map(({ valid, reason }) => (valid ? "valid" : reason))).toEqual([
      "expired",
      "audience_mismatch",
      "valid",
      "bad_signature",
    ]);
    expect(timestampDate(responses.responses[0]!.expiredAt!)).toEqual(expiresAt);
    expect(responses.responses[1]!.claims).toMatchObject({ audience: "org_a" });
    // The audience mismatch did not use the token up.
    expect(await verifyAll([bound])).toMatchObject([{ valid: true, replayed: false }]);
  });

  it("from 15 November 2026 the later copies in one call are invalid with reason replayed", async () => {
    clock.set("2026-11-15T00:00:00Z");
    const token = await mint();
    const responses = await verifyAll([token, token]);
    expect(responses[0]).toMatchObject({ valid: true, replayed: false, reason: "" });
    expect(responses[1]).toMatchObject({ valid: false, replayed: true, reason: "replayed" });
    expect(responses[1]!.claims).toMatchObject({ organization_id: "org_a" });
  });

  it("across concurrent calls sharing tokens in different orders, each token is first exactly once and no call fails", async () => {
    const tokens = await Promise.all(Array.from({ length: 12 }, () => mint()));
    const orders = Array.from({ length: 10 }, (_, i) =>
      (i % 2 === 0 ? [...tokens] : [...tokens].reverse()).map((_, j, all) => all[(j + i) % all.length]!),
    );
    const [batches, singles] = await Promise.all([
      Promise.all(orders.map(verifyAll)),
      Promise.all(tokens.map((token) => running.client.verifyToken({ token }))),
    ]);
    for (const token of tokens) {
      const answers = [
        ...batches.flatMap((responses, i) => responses.filter((_, j) => orders[i]![j] === token)),
        singles[tokens.indexOf(token)]!,
      ];
      expect(answers).toHaveLength(11);
      expect(firstChecks(answers)).toBe(1);
      expect(answers.filter((answer) => answer.reason === "replayed")).toHaveLength(10);
    }
  });

  it("refuses more than 256 tokens in one call with InvalidArgument, and answers an empty call", async () => {
    const failure = await running.client
      .verifyTokens({ requests: Array.from({ length: 257 }, () => ({ token: "a.b.c" })) })
      .then(
        () => undefined,
        (error: unknown) => ConnectError.from(error),
      );
    expect(failure?.code).toBe(Code.InvalidArgument);
    expect(await verifyAll(Array.from({ length: 256 }, () => "a.b.c"))).toHaveLength(256);
    expect(await verifyAll([])).toEqual([]);
  });

  it("answers Unavailable for the whole call when the ledger cannot record, and records nothing", async () => {
    const token = await mint();
    const sql = new pg.Client({ connectionString: db.url });
    await sql.connect();
    await sql.query(`alter table signing.token_check rename to token_check_away`);
    try {
      const failure = await verifyAll([token, "not-a-token"]).then(
        () => undefined,
        (error: unknown) => ConnectError.from(error),
      );
      expect(failure?.code).toBe(Code.Unavailable);
      expect(await verifyAll(["not-a-token"])).toMatchObject([{ valid: false, reason: "malformed" }]);
    } finally {
      await sql.query(`alter table signing.token_check_away rename to token_check`);
      await sql.end();
    }
    expect(await verifyAll([token])).toMatchObject([{ valid: true, replayed: false }]);
  });
});
