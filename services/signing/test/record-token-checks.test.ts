import { createHash } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import { ManualClock } from "@svc/platform";
import { SignAttestationRequestSchema } from "@svc/proto/signing/v1/signing_pb.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../../../test/harness/index.ts";
import { startTestSigning, testKek } from "./service-support.ts";

/**
 * RecordTokenChecks (the gateway verified the token itself and asks only whether its check is the
 * first) against the real replay ledger, which VerifyToken(s) share; and the key set's issuer and
 * `unpublish_at` that such a verifier needs.
 */
describe("RecordTokenChecks", () => {
  let db: TestDatabase;
  let running: Awaited<ReturnType<typeof startTestSigning>>;
  // Only moved forward: a key is unpublished before the instant it was published.
  const clock = new ManualClock("2026-11-14T12:00:00Z");

  beforeAll(async () => {
    db = await createTestDatabase("signing_record");
    running = await startTestSigning(db.url, {
      clock,
      env: { SIGNING_KEK: testKek(), SIGNING_ISSUER: "https://verify.example" },
    });
  });
  afterAll(async () => {
    await running?.service.stop();
    await db?.drop();
  });

  let sequence = 0;
  const mint = async () => {
    const request = create(SignAttestationRequestSchema, {
      requestId: `req_${(++sequence).toString(16).padStart(32, "0")}`,
      verified: true,
      organizationId: "org_a",
      verifiedAt: timestampFromDate(clock.now()),
    });
    return (await running.client.signAttestation(request)).token;
  };
  const checkOf = (token: string) => ({
    payloadHash: createHash("sha256").update(token.split(".")[1]!).digest(),
    expiresAt: timestampFromDate(new Date(clock.now().getTime() + 120_000)),
  });
  const record = async (tokens: string[]) =>
    (await running.client.recordTokenChecks({ checks: tokens.map(checkOf) })).first;
  const refusal = (call: Promise<unknown>) =>
    call.then(
      () => undefined,
      (error: unknown) => ConnectError.from(error),
    );

  it("answers in order; of copies in one call only the first listed is first, and a later call is not", async () => {
    const [a, b] = [await mint(), await mint()];
    expect(await record([a, b, a, a])).toEqual([true, true, false, false]);
    expect(await record([b])).toEqual([false]);
  });

  it("shares the ledger with VerifyToken both ways: whichever checks a token first is first", async () => {
    const [recorded, verified] = [await mint(), await mint()];
    expect(await record([recorded])).toEqual([true]);
    expect(await running.client.verifyToken({ token: recorded })).toMatchObject({ valid: true, replayed: true });
    expect(await running.client.verifyToken({ token: verified })).toMatchObject({ valid: true, replayed: false });
    expect(await record([verified])).toEqual([false]);
  });

  it("of concurrent calls sharing tokens, each token is first exactly once", async () => {
    const tokens = await Promise.all(Array.from({ length: 10 }, () => mint()));
    const calls = await Promise.all(
      Array.from({ length: 8 }, (_, i) => record(i % 2 === 0 ? tokens : [...tokens].reverse())),
    );
    tokens.forEach((_, t) => {
      const firsts = calls.filter((first, i) => first[i % 2 === 0 ? t : tokens.length - 1 - t]);
      expect(firsts).toHaveLength(1);
    });
  });

  it("refuses more than 256 checks, a digest that is not 32 bytes and a missing expiry with InvalidArgument", async () => {
    const token = await mint();
    const many = Array.from({ length: 257 }, () => checkOf(token));
    expect((await refusal(running.client.recordTokenChecks({ checks: many })))?.code).toBe(Code.InvalidArgument);
    const short = { ...checkOf(token), payloadHash: new Uint8Array(31) };
    expect((await refusal(running.client.recordTokenChecks({ checks: [short] })))?.code).toBe(Code.InvalidArgument);
    const endless = { payloadHash: checkOf(token).payloadHash };
    expect((await refusal(running.client.recordTokenChecks({ checks: [endless] })))?.code).toBe(Code.InvalidArgument);
    // Nothing of a refused call was recorded.
    expect(await record([token])).toEqual([true]);
    expect((await running.client.recordTokenChecks({ checks: [] })).first).toEqual([]);
  });

  it("the key set names the issuer, and a key the next one replaced carries when it stops being published", async () => {
    const before = await running.client.getKeySet({});
    expect(before.issuer).toBe("https://verify.example");
    expect(before.keys).toHaveLength(1);
    expect(before.keys[0]!.unpublishAt).toBeUndefined();

    const rotation = await running.client.rotateKeys({});
    const after = await running.client.getKeySet({});
    const old = after.keys.find((key) => key.kid === before.keys[0]!.kid)!;
    const next = after.keys.find((key) => key.kid === rotation.kid)!;
    const oldInfo = rotation.keys.find((key) => key.kid === old.kid)!;
    expect(timestampDate(old.unpublishAt!)).toEqual(timestampDate(oldInfo.unpublishAt!));
    expect(next.unpublishAt).toBeUndefined();
  });
});
