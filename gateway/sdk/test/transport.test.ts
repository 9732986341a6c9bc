import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, expect, test } from "vitest";
import { InvalidRequestError, Svc, SvcError } from "../src/index.ts";

/**
 * The retry rule against a real HTTP server that answers from a script: what is retried (a failed connection,
 * 502, 503, a retryable `data.error`), what is not (a 400, a 500, a refusal), how many times, and that every
 * attempt of one POST carries the same `Idempotency-Key`.
 */

type Scripted = { status: number; body?: unknown } | "drop";
let script: Scripted[] = [];
let seen: { method: string; url: string; headers: IncomingHttpHeaders }[] = [];
let baseUrl = "";
const server = createServer((request, response) => {
  seen.push({ method: request.method ?? "", url: request.url ?? "", headers: request.headers });
  request.resume();
  request.on("end", () => {
    const next = script.shift() ?? { status: 200, body: { data: { data: { ok: true } } } };
    if (next === "drop") return request.socket.destroy();
    response.writeHead(next.status, { "content-type": "application/json" });
    response.end(next.body === undefined ? "" : JSON.stringify(next.body));
  });
});

beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

const run = (answers: Scripted[], maxRetries = 2) => {
  script = answers;
  seen = [];
  return new Svc({ apiKey: "svc_dev_k", baseUrl, maxRetries }).sessions.create({ partner_user_id: "u" });
};
const failure = (promise: Promise<unknown>) =>
  promise.then(
    () => undefined,
    (error: unknown) => error,
  );
const retryable = { status: 200, body: { data: { error: { statusCode: 500, message: "x", retryable: true } } } };

test("retries a dropped connection, 502, 503 and a retryable data.error, with one Idempotency-Key", async () => {
  const answered = await run(["drop", { status: 502 }, retryable], 3);
  expect(answered).toEqual({ ok: true });
  expect(answered.response.attempts).toBe(4);
  const keys = new Set(seen.map((request) => request.headers["idempotency-key"]));
  expect(keys.size).toBe(1);
  expect([...keys][0]).toMatch(/^[0-9a-f-]{36}$/);
  expect(seen[0]?.headers.authorization).toBe("Bearer svc_dev_k");
  expect((await run([{ status: 503 }], 1)).response.attempts).toBe(2);
}, 20_000);

test("stops after maxRetries and throws the last failure as an SvcError", async () => {
  const error = await failure(run([{ status: 503 }, { status: 503 }, { status: 503 }, { status: 503 }]));
  expect(error).toBeInstanceOf(SvcError);
  expect(error).toMatchObject({ statusCode: 503, retryable: true });
  expect(seen).toHaveLength(3);
}, 20_000);

test("does not retry a 400, a 500 or a refusal that is not retryable", async () => {
  const invalid = { code: "InputValidationError", message: "bad", input: {}, errors: [] };
  expect(await failure(run([{ status: 400, body: invalid }]))).toBeInstanceOf(InvalidRequestError);
  expect(seen).toHaveLength(1);
  expect(await failure(run([{ status: 500 }]))).toMatchObject({ statusCode: 500, code: "server_error" });
  expect(seen).toHaveLength(1);
  const conflict = { data: { error: { statusCode: 409, message: "pending" } } };
  expect(await failure(run([{ status: 200, body: conflict }]))).toMatchObject({ statusCode: 409 });
  expect(seen).toHaveLength(1);
});

test("an answer that is not the envelope is an SvcError, never a bare Error", async () => {
  const error = await failure(run([{ status: 200, body: { unexpected: true } }]));
  expect(error).toBeInstanceOf(SvcError);
  expect(error).toMatchObject({ code: "unexpected_answer" });
});

test("a call past its timeout is an SvcError timeout, and the caller's idempotency key is used", async () => {
  script = [];
  seen = [];
  const slow = createServer(() => undefined);
  await new Promise<void>((resolve) => slow.listen(0, "127.0.0.1", resolve));
  try {
    const svc = new Svc({
      apiKey: "svc_dev_k",
      baseUrl: `http://127.0.0.1:${(slow.address() as AddressInfo).port}/v1`,
      timeoutMs: 300,
    });
    expect(await failure(svc.sessions.create({}, { idempotencyKey: "mine" }))).toMatchObject({
      statusCode: 0,
      code: "timeout",
    });
  } finally {
    slow.closeAllConnections();
    slow.close();
  }
  const answered = await new Svc({ apiKey: "svc_dev_k", baseUrl }).sessions.create({}, { idempotencyKey: "mine" });
  expect(answered.response.idempotencyKey).toBe("mine");
  expect(seen[0]?.headers["idempotency-key"]).toBe("mine");
});
