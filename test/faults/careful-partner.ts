import { setTimeout as sleep } from "node:timers/promises";

export interface Answer {
  status: number;
  // biome-ignore lint/suspicious/noExplicitAny: a JSON answer in the spec's envelope, read field by field.
  body: any;
}

/** A call gave no usable answer before its deadline: the mesh did not recover in time for it. */
export class GaveUp extends Error {}

/** A final answer that is not a success: the flow cannot go on (a careful partner would not retry it). */
class Refused extends Error {}

export interface RetryCounts {
  /** Calls sent again after a connection error, a 5xx, a "retry" answer, a busy key or a rate limit. */
  retries: number;
}

/**
 * Whether a careful partner sends the same call again: no answer (connection refused or reset, a timeout),
 * an HTTP 5xx or anything else outside the envelope, `data.error` 5xx ("…; retry"), 429 or a rate-limit
 * refusal, `idempotency_key_in_use` (the first attempt still holds its key, or held it when its gateway
 * died, until the lease ends).
 */
function worthRetrying(answer: Answer | undefined): boolean {
  if (answer === undefined) return true;
  if (answer.status !== 200) return true;
  const error = answer.body?.data?.error;
  if (error === undefined) return false;
  return error.statusCode >= 500 || error.statusCode === 429 || error.code === "idempotency_key_in_use";
}

/**
 * The public API as a careful partner's server calls it: every POST with an `Idempotency-Key` that stays the
 * same across its retries, and every call sent again, with a growing pause, until it has a final answer.
 */
export function carefulPartner(gatewayUrl: string, counts: RetryCounts, deadlineMs: number) {
  const once = async (
    method: "GET" | "POST",
    path: string,
    input: Record<string, unknown>,
    credential: string,
    idempotencyKey: string | undefined,
  ): Promise<Answer | undefined> => {
    const url = new URL(`${gatewayUrl}/v1${path}`);
    const headers: Record<string, string> = { authorization: `Bearer ${credential}` };
    if (method === "GET") for (const [k, v] of Object.entries(input)) url.searchParams.set(k, String(v));
    else headers["content-type"] = "application/json";
    if (idempotencyKey !== undefined) headers["idempotency-key"] = idempotencyKey;
    try {
      const response = await fetch(url, {
        method,
        headers,
        body: method === "POST" ? JSON.stringify(input) : undefined,
        // Longer than the longest long-poll asked for (wait_seconds 5), short enough to notice a hung call.
        signal: AbortSignal.timeout(20_000),
      });
      const text = await response.text();
      try {
        return { status: response.status, body: JSON.parse(text) };
      } catch {
        return { status: response.status === 200 ? 599 : response.status, body: text };
      }
    } catch {
      return undefined;
    }
  };

  const call = async (
    method: "GET" | "POST",
    path: string,
    input: Record<string, unknown>,
    credential: string,
    idempotencyKey?: string,
  ): Promise<Answer> => {
    const deadline = performance.now() + deadlineMs;
    let pause = 100;
    for (;;) {
      const answer = await once(method, path, input, credential, idempotencyKey);
      if (!worthRetrying(answer)) return answer as Answer;
      if (performance.now() > deadline)
        throw new GaveUp(
          `${method} ${path}: no final answer within ${deadlineMs} ms (${JSON.stringify(answer?.body)})`,
        );
      counts.retries++;
      await sleep(pause);
      pause = Math.min(pause * 2, 2000);
    }
  };

  /** `data.data` (or the flat `data`) of a successful final answer; a final refusal ends the flow. */
  const success = (answer: Answer, path: string, flat = false) => {
    const error = answer.body?.data?.error;
    if (error !== undefined) throw new Refused(`${path}: ${JSON.stringify(error)}`);
    return flat ? answer.body.data : answer.body.data.data;
  };

  return {
    post: async (path: string, body: Record<string, unknown>, credential: string, idempotencyKey: string) =>
      success(await call("POST", path, body, credential, idempotencyKey), path),
    get: async (path: string, query: Record<string, unknown>, credential: string, flat = false) =>
      success(await call("GET", path, query, credential), path, flat),
  };
}

export type CarefulPartner = ReturnType<typeof carefulPartner>;

/** Runs `work` again after any failure, with a growing pause, until it succeeds or the deadline passes. */
export async function untilItWorks<T>(work: () => Promise<T>, counts: RetryCounts, deadlineMs: number): Promise<T> {
  const deadline = performance.now() + deadlineMs;
  let pause = 100;
  for (;;) {
    try {
      return await work();
    } catch (error) {
      if (performance.now() > deadline) throw new GaveUp(`gave up: ${String(error)}`);
      counts.retries++;
      await sleep(pause);
      pause = Math.min(pause * 2, 2000);
    }
  }
}
