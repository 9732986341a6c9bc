import type { KeyObject } from "node:crypto";
import { type Logger, uuid } from "@svc/platform";
import { InputValidationError, OperationError } from "../http/errors.ts";
import type { Outcome, Stage } from "../http/pipeline.ts";
import { answerSealKey, openAnswer, type StoredAnswer, sealAnswer } from "./answer-seal.ts";
import {
  idempotencyHeader,
  idempotencyKeyLifetimeMs,
  idempotencyScope,
  readIdempotencyKey,
  requestDigest,
  scopedKeyHash,
} from "./idempotency-key.ts";
import type { IdempotencyStore } from "./idempotency-store.ts";

/**
 * How long a running request holds its key before another may take it over: longer than any POST
 * operation runs, so only a replica that died mid-operation leaves a key this long.
 */
export const idempotencyLeaseMs = 60_000;

/** The response header that tells a replay from a first answer (as Stripe's `Idempotent-Replayed`). */
export const replayedHeader = "Idempotent-Replayed";

/**
 * What is kept as the key's answer: the operation's result and its refusals (`data.error` below 500),
 * which are final. A 5xx-class refusal ("retry"), a 429 (a service behind asked to come back later),
 * an unhandled failure or a stream is not: the key is released, so the retry runs the operation again.
 */
function finalAnswer(outcome: Outcome): StoredAnswer | undefined {
  if (outcome.kind === "ok") return { kind: "ok", data: outcome.data };
  if (outcome.kind === "error" && outcome.error.statusCode < 500 && outcome.error.statusCode !== 429)
    return { kind: "error", error: outcome.error };
  return undefined;
}

/**
 * `Idempotency-Key` on the public POST operations (decisions.md, "Idempotency-Key scope"), just before
 * `handle`: the input is validated by then (a 400 created nothing and is never stored), and the rate
 * limiter has counted the request (a replay is a request like any other). The same key with the same
 * request answers the first final answer again for 24 hours; with another request, `data.error` 409
 * `idempotency_key_reused`; while its first request still runs, 409 `idempotency_key_in_use` (the
 * operation never runs twice at once). GET operations ignore the header: they change nothing.
 */
export function idempotencyStage(options: { store: IdempotencyStore; pepper: KeyObject; logger: Logger }): Stage {
  const { store, pepper, logger } = options;
  return {
    name: "idempotency",
    async run(ctx, next) {
      if (ctx.route.method !== "POST") return next();
      const reading = readIdempotencyKey(ctx.headers);
      if (reading.kind === "absent") return next();
      if (reading.kind === "invalid") throw new InputValidationError(ctx.rawInput, [reading.issue]);
      const scope = idempotencyScope({
        credential: ctx.credential,
        grantToken: ctx.grant?.token,
        input: ctx.input as Record<string, unknown>,
        scopeField: ctx.route.idempotencyScope,
      });
      if (scope === undefined) return next();

      const keyHash = scopedKeyHash(pepper, scope, reading.key);
      const now = ctx.clock.now();
      const claim = await store.claim({
        keyHash,
        digest: requestDigest(ctx.route.method, ctx.route.path, ctx.input),
        claimId: uuid(),
        now,
        leaseUntil: new Date(now.getTime() + idempotencyLeaseMs),
        expiresAt: new Date(now.getTime() + idempotencyKeyLifetimeMs),
      });
      switch (claim.kind) {
        case "reused":
          throw new OperationError(409, `this ${idempotencyHeader} was used with a different request`, {
            code: "idempotency_key_reused",
          });
        case "in_use":
          throw new OperationError(409, `a request with this ${idempotencyHeader} is still running; retry later`, {
            code: "idempotency_key_in_use",
          });
        case "replay": {
          ctx.responseHeaders[replayedHeader] = "true";
          const answer = openAnswer(answerSealKey(pepper, scope, reading.key), keyHash, claim.sealed);
          return answer.kind === "ok"
            ? { kind: "ok", data: answer.data }
            : { kind: "error", error: answer.error as OperationErrorEnvelope };
        }
      }

      ctx.idempotencyToken = keyHash.toString("base64url");
      const outcome = await next();
      const answer = finalAnswer(outcome);
      // The key is written after the answer is decided; if that write fails, the answer still goes out
      // and the key is left to its lease, after which a retry runs the operation again.
      const sealed = answer && sealAnswer(answerSealKey(pepper, scope, reading.key), keyHash, answer);
      await (sealed ? store.finish(keyHash, claim.claimId, sealed) : store.release(keyHash, claim.claimId)).catch(
        (error: unknown) => logger.warn("could not record an Idempotency-Key answer", { error }),
      );
      return outcome;
    },
  };
}

type OperationErrorEnvelope = ReturnType<OperationError["toEnvelope"]>;
