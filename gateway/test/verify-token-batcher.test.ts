import { create } from "@bufbuild/protobuf";
import { type Client, Code, ConnectError } from "@connectrpc/connect";
import {
  type SigningService,
  type VerifyTokenResponse,
  type VerifyTokensResponse,
  VerifyTokensResponseSchema,
} from "@svc/proto/signing/v1/signing_pb.js";
import { describe, expect, test } from "vitest";
import { outcomeOf } from "../src/http/pipeline.ts";
import { type TokenCheck, VerifyTokenBatcher } from "../src/operations/verify-token-batcher.ts";

interface Sent {
  checks: TokenCheck[];
  /** Answers each check with its own token as `reason`, so a caller can tell whose answer it got. */
  answer(count?: number): void;
  fail(error: unknown): void;
}

/** Signing's VerifyTokens, answered by hand: every call waits until the test answers or fails it. */
function handAnsweredSigning() {
  const sent: Sent[] = [];
  const signing: Pick<Client<typeof SigningService>, "verifyTokens"> = {
    verifyTokens: (request) =>
      new Promise<VerifyTokensResponse>((resolve, reject) => {
        const checks = (request.requests ?? []).map(({ token, audience }) => ({ token: token ?? "", audience }));
        sent.push({
          checks,
          answer: (count = checks.length) =>
            resolve(
              create(VerifyTokensResponseSchema, {
                responses: checks.slice(0, count).map(({ token }) => ({ valid: true, reason: token })),
              }),
            ),
          fail: reject,
        });
      }),
  };
  return { signing, sent };
}

/** Lets every callback queued by a settled RPC run. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

const tokensOf = (sent: Sent) => sent.checks.map(({ token }) => token);

function track(promise: Promise<VerifyTokenResponse>) {
  const state: { answer?: VerifyTokenResponse; error?: unknown } = {};
  promise.then(
    (answer) => (state.answer = answer),
    (error: unknown) => (state.error = error),
  );
  return state;
}

describe("VerifyTokenBatcher", () => {
  test("a call made while no batch is in flight goes out at once, alone; calls made meanwhile leave together when it returns", async () => {
    const { signing, sent } = handAnsweredSigning();
    const batcher = new VerifyTokenBatcher(signing);
    const first = track(batcher.verify({ token: "t1", audience: "org_a" }));
    expect(sent.map(tokensOf)).toEqual([["t1"]]);
    expect(sent[0]!.checks).toEqual([{ token: "t1", audience: "org_a" }]);

    const later = ["t2", "t3", "t4"].map((token) => track(batcher.verify({ token })));
    await settle();
    expect(sent).toHaveLength(1);

    sent[0]!.answer();
    await settle();
    expect(first.answer?.reason).toBe("t1");
    expect(sent.map(tokensOf)).toEqual([["t1"], ["t2", "t3", "t4"]]);
    expect(later.every((call) => call.answer === undefined)).toBe(true);

    sent[1]!.answer();
    await settle();
    expect(later.map((call) => call.answer?.reason)).toEqual(["t2", "t3", "t4"]);
    expect(sent).toHaveLength(2);
  });

  test("a queue longer than the batch bound leaves in bounded batches, one at a time, in arrival order", async () => {
    const { signing, sent } = handAnsweredSigning();
    const batcher = new VerifyTokenBatcher(signing, { maxBatch: 3 });
    const calls = Array.from({ length: 8 }, (_, i) => track(batcher.verify({ token: `t${i}` })));
    for (const expected of [["t0"], ["t1", "t2", "t3"], ["t4", "t5", "t6"], ["t7"]]) {
      await settle();
      expect(tokensOf(sent.at(-1)!)).toEqual(expected);
      sent.at(-1)!.answer();
    }
    await settle();
    expect(sent).toHaveLength(4);
    expect(calls.map((call) => call.answer?.reason)).toEqual(calls.map((_, i) => `t${i}`));
  });

  test("an RPC failure fails exactly the calls of its batch, with the error a single call got, mapped to the same data.error", async () => {
    const { signing, sent } = handAnsweredSigning();
    const batcher = new VerifyTokenBatcher(signing);
    const first = track(batcher.verify({ token: "t1" }));
    const failing = ["t2", "t3"].map((token) => track(batcher.verify({ token })));
    sent[0]!.answer();
    await settle();
    const after = track(batcher.verify({ token: "t4" }));

    const unavailable = new ConnectError("connect ECONNREFUSED 10.0.0.7:9091", Code.Unavailable);
    sent[1]!.fail(unavailable);
    await settle();
    expect(first.answer?.reason).toBe("t1");
    expect(failing.map((call) => call.error)).toEqual([unavailable, unavailable]);
    expect(outcomeOf(failing[0]!.error)).toEqual({
      kind: "error",
      error: { statusCode: 502, message: "a service behind the gateway did not answer; retry with backoff" },
      cause: unavailable,
    });

    expect(tokensOf(sent[2]!)).toEqual(["t4"]);
    sent[2]!.answer();
    await settle();
    expect(after.answer?.reason).toBe("t4");
  });

  test("an answer that does not match the batch fails its calls as unhandled instead of mixing answers up", async () => {
    const { signing, sent } = handAnsweredSigning();
    const batcher = new VerifyTokenBatcher(signing);
    batcher.verify({ token: "t1" });
    await settle();
    const calls = ["t2", "t3"].map((token) => track(batcher.verify({ token })));
    sent[0]!.answer();
    await settle();
    sent[1]!.answer(1);
    await settle();
    expect(calls.every((call) => call.answer === undefined && call.error instanceof Error)).toBe(true);
    expect(outcomeOf(calls[0]!.error).kind).toBe("unhandled");
  });
});
