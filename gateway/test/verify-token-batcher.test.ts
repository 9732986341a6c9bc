import { create } from "@bufbuild/protobuf";
import { TimestampSchema, timestampDate } from "@bufbuild/protobuf/wkt";
import { type Client, Code, ConnectError } from "@connectrpc/connect";
import type { AttestationLedgerCheck as LedgerCheck } from "@svc/contracts/attestation";
import {
  type RecordTokenChecksResponse,
  RecordTokenChecksResponseSchema,
  type SigningService,
} from "@svc/proto/signing/v1/signing_pb.js";
import { describe, expect, test } from "vitest";
import { outcomeOf } from "../src/http/pipeline.ts";
import { TokenCheckBatcher } from "../src/operations/verify-token-batcher.ts";

interface Sent {
  /** Each check's token, read back from its digest (the tests hash a token's name into the first bytes). */
  tokens: string[];
  expiries: Date[];
  /** Answers `first` for the checks of tokens named `first…` (the tests pick which), in order. */
  answer(count?: number): void;
  fail(error: unknown): void;
}

/** A check of the token named `name` (written into its digest), expiring at `expiresAt`. */
const check = (name: string, expiresAt = new Date("2026-11-20T12:02:00Z")): LedgerCheck => {
  const payloadHash = Buffer.alloc(32);
  payloadHash.write(name);
  return { payloadHash, expiresAt };
};
const nameOf = (payloadHash: Uint8Array) => Buffer.from(payloadHash).toString().replace(/\0+$/, "");

/** Signing's RecordTokenChecks, answered by hand: every call waits until the test answers or fails it. */
function handAnsweredSigning() {
  const sent: Sent[] = [];
  const signing: Pick<Client<typeof SigningService>, "recordTokenChecks"> = {
    recordTokenChecks: (request) =>
      new Promise<RecordTokenChecksResponse>((resolve, reject) => {
        const checks = request.checks ?? [];
        const tokens = checks.map((c) => nameOf(c.payloadHash ?? new Uint8Array()));
        sent.push({
          tokens,
          expiries: checks.map((c) => timestampDate(create(TimestampSchema, c.expiresAt))),
          answer: (count = tokens.length) =>
            resolve(
              create(RecordTokenChecksResponseSchema, {
                first: tokens.slice(0, count).map((token) => token.startsWith("first")),
              }),
            ),
          fail: reject,
        });
      }),
  };
  return { signing, sent };
}

/** Lets every callback queued by a settled RPC run, and the batch it let leave at the end of the next turn. */
const settle = async () => {
  for (let turn = 0; turn < 3; turn++) await new Promise((resolve) => setImmediate(resolve));
};

const tokensOf = (sent: Sent) => sent.tokens;

function track(promise: Promise<boolean>) {
  const state: { answer?: boolean; error?: unknown } = {};
  promise.then(
    (answer) => (state.answer = answer),
    (error: unknown) => (state.error = error),
  );
  return state;
}

describe("TokenCheckBatcher", () => {
  test("the checks of one turn leave together at its end; checks made while a batch is in flight leave together when it returns", async () => {
    const { signing, sent } = handAnsweredSigning();
    const batcher = new TokenCheckBatcher(signing);
    const expiresAt = new Date("2026-11-20T12:02:00Z");
    const first = track(batcher.record(check("first-1", expiresAt)));
    expect(sent).toHaveLength(0);
    await settle();
    expect(sent.map(tokensOf)).toEqual([["first-1"]]);
    expect(sent[0]!.expiries).toEqual([expiresAt]);

    const later = ["t2", "first-3", "t4"].map((token) => track(batcher.record(check(token))));
    await settle();
    expect(sent).toHaveLength(1);

    sent[0]!.answer();
    await settle();
    expect(first.answer).toBe(true);
    expect(sent.map(tokensOf)).toEqual([["first-1"], ["t2", "first-3", "t4"]]);
    expect(later.every((call) => call.answer === undefined)).toBe(true);

    sent[1]!.answer();
    await settle();
    expect(later.map((call) => call.answer)).toEqual([false, true, false]);
    expect(sent).toHaveLength(2);
  });

  test("a queue longer than the batch bound leaves in bounded batches, one at a time, in arrival order", async () => {
    const { signing, sent } = handAnsweredSigning();
    const batcher = new TokenCheckBatcher(signing, { maxBatch: 3 });
    const names = Array.from({ length: 8 }, (_, i) => (i % 3 === 0 ? `first-${i}` : `t${i}`));
    const calls = names.map((name) => track(batcher.record(check(name))));
    for (const expected of [
      [0, 1, 2],
      [3, 4, 5],
      [6, 7],
    ]) {
      await settle();
      expect(tokensOf(sent.at(-1)!)).toEqual(expected.map((i) => names[i]));
      sent.at(-1)!.answer();
    }
    await settle();
    expect(sent).toHaveLength(3);
    expect(calls.map((call) => call.answer)).toEqual(names.map((name) => name.startsWith("first")));
  });

  test("an RPC failure fails exactly the checks of its batch, with the error a single call got, mapped to the same data.error", async () => {
    const { signing, sent } = handAnsweredSigning();
    const batcher = new TokenCheckBatcher(signing);
    const first = track(batcher.record(check("first-1")));
    await settle();
    const failing = ["t2", "t3"].map((token) => track(batcher.record(check(token))));
    sent[0]!.answer();
    await settle();
    const after = track(batcher.record(check("first-4")));
    await settle();

    const unavailable = new ConnectError("connect ECONNREFUSED 10.0.0.7:9091", Code.Unavailable);
    sent[1]!.fail(unavailable);
    await settle();
    expect(first.answer).toBe(true);
    expect(failing.map((call) => call.error)).toEqual([unavailable, unavailable]);
    expect(outcomeOf(failing[0]!.error)).toEqual({
      kind: "error",
      error: { statusCode: 502, message: "a service behind the gateway did not answer; retry with backoff" },
      cause: unavailable,
    });

    expect(tokensOf(sent[2]!)).toEqual(["first-4"]);
    sent[2]!.answer();
    await settle();
    expect(after.answer).toBe(true);
  });

  test("an answer that does not match the batch fails its checks as unhandled instead of mixing answers up", async () => {
    const { signing, sent } = handAnsweredSigning();
    const batcher = new TokenCheckBatcher(signing);
    batcher.record(check("t1"));
    await settle();
    const calls = ["first-2", "t3"].map((token) => track(batcher.record(check(token))));
    sent[0]!.answer();
    await settle();
    sent[1]!.answer(1);
    await settle();
    expect(calls.every((call) => call.answer === undefined && call.error instanceof Error)).toBe(true);
    expect(outcomeOf(calls[0]!.error).kind).toBe("unhandled");
  });
});
