import { request as httpRequest } from "node:http";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { ManualClock } from "@svc/platform";
import { CallerSchema } from "@svc/proto/common/v1/caller_pb.js";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { authenticateStage } from "../src/credentials/authenticate.ts";
import type { CredentialResolver } from "../src/credentials/resolver.ts";
import { OperationError } from "../src/http/errors.ts";
import { bodyLimitBytes, parseStage } from "../src/http/parse.ts";
import { handleStage, type Stage, validateStage } from "../src/http/pipeline.ts";
import { type RunningServer, startPublicServer } from "../src/http/public-server.ts";
import { jsonReply, type RawRoute } from "../src/http/raw-route.ts";
import { fail, ok } from "../src/http/route.ts";
import type { GatewayServices } from "../src/services.ts";
import { defineRoute } from "../src/services.ts";
import { memoryLogger } from "./memory-logger.ts";

/**
 * The pipeline over real HTTP with a route table of its own: every stage, without a database.
 * (The production route table is tested against the whole gateway in gateway.integration.test.ts.)
 */
const routes = [
  defineRoute({
    operationId: "echo",
    method: "POST",
    path: "/test/echo",
    summary: "echoes its validated input",
    auth: { accepts: [] },
    input: {
      type: "object",
      properties: { name: { type: "string", minLength: 1 }, count: { type: "integer", default: 1 } },
      required: ["name"],
    },
    envelope: "nested",
    handle: async (input) => ok({ name: input.name, count: input.count }),
  }),
  defineRoute({
    operationId: "status",
    method: "GET",
    path: "/test/status",
    summary: "a flat result from query input",
    auth: { accepts: [] },
    input: { type: "object", properties: { limit: { type: "integer", minimum: 1, maximum: 100, default: 25 } } },
    envelope: "flat",
    handle: async (input) => ok({ found: true, limit: input.limit }),
  }),
  defineRoute({
    operationId: "needsKey",
    method: "POST",
    path: "/test/needs-key",
    summary: "refuses a missing key in data.error",
    auth: { accepts: [] },
    input: {
      type: "object",
      properties: { key: { type: "string", minLength: 1 }, count: { type: "integer" } },
      required: ["key"],
    },
    refuseMissing: { key: { code: "key_required", message: "send key" } },
    envelope: "nested",
    handle: async (input) => ok({ key: input.key }),
  }),
  defineRoute({
    operationId: "refuse",
    method: "POST",
    path: "/test/refuse",
    summary: "refuses by throwing",
    auth: { accepts: [] },
    input: { type: "object" },
    envelope: "nested",
    handle: async () => {
      throw new OperationError(409, "same user already has a pending request");
    },
  }),
  defineRoute({
    operationId: "failResult",
    method: "POST",
    path: "/test/fail",
    summary: "refuses by returning",
    auth: { accepts: [] },
    input: { type: "object" },
    envelope: "flat",
    handle: async () => fail(403, "gate not allowed for this key", { code: "gate_not_allowed" }),
  }),
  defineRoute({
    operationId: "upstream",
    method: "POST",
    path: "/test/upstream",
    summary: "a business service refuses",
    auth: { accepts: [] },
    input: { type: "object" },
    envelope: "nested",
    handle: async () => {
      throw new ConnectError("no proposal with that request_id", Code.NotFound);
    },
  }),
  defineRoute({
    operationId: "crash",
    method: "POST",
    path: "/test/crash",
    summary: "fails unhandled",
    auth: { accepts: [] },
    input: { type: "object" },
    envelope: "nested",
    handle: async () => {
      throw new TypeError("cannot read properties of undefined");
    },
  }),
  defineRoute({
    operationId: "whoami",
    method: "POST",
    path: "/test/whoami",
    summary: "needs a secret key",
    auth: { accepts: ["secret_key"], statusFor: { invalid_key: 403 } },
    input: { type: "object", properties: { name: { type: "string" } }, required: ["name"] },
    envelope: "nested",
    handle: async (_input, ctx) => ok({ organization_id: ctx.caller?.organizationId }),
  }),
];

const secretKeys: CredentialResolver = {
  kind: "secret_key",
  recognizes: (c) => c.startsWith("svc_dev_"),
  resolve: async (credential) =>
    credential === "svc_dev_good"
      ? {
          ok: true,
          credential: {
            kind: "secret_key",
            allowedGates: [],
            caller: create(CallerSchema, { organizationId: "org-1" }),
          },
        }
      : { ok: false, failure: "invalid_key", message: "the API key is not valid" },
};

/** Stands where the rate limiter will: adds `_rateLimit` and a header, or answers on its own. */
const rateLimitSlot: Stage = {
  name: "rate limit",
  async run(ctx, next) {
    if (ctx.headers["x-test-blocked"])
      return {
        kind: "http",
        status: 403,
        body: { errors: [{ message: "rate limit exceeded", code: "RATE_LIMITED" }] },
      };
    ctx.responseHeaders["x-test-stage"] = "ran";
    const outcome = await next();
    if (ctx.credential) ctx.extras._rateLimit = { scope: "bs_test", after: outcome.kind };
    return outcome;
  },
};

/** Replies outside the envelope: one at a path of its own, one for every path a pattern matches. */
const rawRoutes: RawRoute[] = [
  {
    path: "/raw/page",
    method: "GET",
    serve: () => ({
      status: 200,
      headers: { "content-type": "text/plain", "cache-control": "no-store" },
      body: "page",
    }),
  },
  {
    path: /^\/v1\/files\//,
    method: "GET",
    serve: ({ url }) =>
      url.pathname.endsWith(".txt")
        ? jsonReply(200, { file: url.pathname, q: url.searchParams.get("q") })
        : jsonReply(404, { error: "not_found", message: "no such file" }),
  },
];

let server: RunningServer;
const logger = memoryLogger();

beforeAll(async () => {
  server = await startPublicServer({
    host: "127.0.0.1",
    port: 0,
    routes,
    rawRoutes,
    stages: [parseStage, authenticateStage([secretKeys]), rateLimitSlot, validateStage, handleStage],
    services: {} as GatewayServices,
    clock: new ManualClock("2026-10-20T12:00:00Z"),
    logger,
    ready: async () => {},
  });
});
afterAll(() => server?.stop());

const post = (path: string, body: string | undefined, headers: Record<string, string> = {}) =>
  fetch(`${server.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    ...(body !== undefined && { body }),
  });

describe("parse", () => {
  test("a valid body reaches the handler, validated and with defaults", async () => {
    const response = await post("/v1/test/echo", JSON.stringify({ name: "ada", ignored: true }));
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toMatch(/^application\/json/);
    expect(await response.json()).toEqual({ data: { data: { name: "ada", count: 1 } } });
  });

  test.each([
    ["malformed JSON", "{", {}, "request body is not valid JSON"],
    ["a JSON array", "[1]", {}, "request body must be a JSON object"],
    ["a JSON string", '"x"', {}, "request body must be a JSON object"],
    [
      "a form body",
      "name=ada",
      { "content-type": "application/x-www-form-urlencoded" },
      "request body must be JSON, sent with Content-Type: application/json",
    ],
  ])("%s is a 400 InputValidationError", async (_label, body, headers, message) => {
    const response = await post("/v1/test/echo", body, headers);
    expect(response.status).toBe(400);
    const json = await response.json();
    expect(json).toMatchObject({
      code: "InputValidationError",
      input: {},
      errors: [{ propertyPath: "", invalidValue: null }],
    });
    expect(json.errors[0].message).toContain(message);
    expect(json.message).toContain(message);
  });

  test("an empty body is an empty object, so missing fields are named", async () => {
    const response = await post("/v1/test/echo", undefined);
    expect(response.status).toBe(400);
    expect(await response.json()).toEqual({
      code: "InputValidationError",
      message: "Input validation failed: name is required",
      input: {},
      errors: [{ propertyPath: "name", invalidValue: null, message: "name is required" }],
    });
  });

  test("a body over the limit is a 400, and the connection is closed", async () => {
    const response = await post("/v1/test/echo", JSON.stringify({ name: "x".repeat(bodyLimitBytes) }));
    expect(response.status).toBe(400);
    expect(response.headers.get("connection")).toBe("close");
    expect((await response.json()).errors[0].message).toBe(`request body is larger than ${bodyLimitBytes} bytes`);
  });

  test("a body over the limit without Content-Length (chunked) is a 400 too", async () => {
    const { status, body } = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = httpRequest(
        `${server.url}/v1/test/echo`,
        { method: "POST", headers: { "content-type": "application/json" } },
        (res) => {
          let text = "";
          res.on("data", (c) => (text += c));
          res.on("end", () => resolve({ status: res.statusCode ?? 0, body: text }));
        },
      );
      req.on("error", reject);
      req.write(`{"name":"${"x".repeat(bodyLimitBytes)}`);
      req.write(`${"y".repeat(1024)}"}`);
      req.end();
    });
    expect(status).toBe(400);
    expect(JSON.parse(body).code).toBe("InputValidationError");
  });

  test("query parameters are the input of a GET, and a flat route answers under data", async () => {
    const response = await fetch(`${server.url}/v1/test/status?limit=7`);
    expect(await response.json()).toEqual({ data: { found: true, limit: 7 } });
    const invalid = await fetch(`${server.url}/v1/test/status?limit=0`);
    expect(invalid.status).toBe(400);
    expect(await invalid.json()).toMatchObject({
      input: { limit: "0" },
      errors: [{ propertyPath: "limit", invalidValue: "0", message: "limit must be at least 1" }],
    });
  });
});

describe("outcomes", () => {
  test("a missing field the route refuses is data.error before any other problem; a present but bad one is a 400", async () => {
    const missing = await post("/v1/test/needs-key", JSON.stringify({ count: "many" }));
    expect([missing.status, await missing.json()]).toEqual([
      200,
      { data: { error: { statusCode: 400, code: "key_required", message: "send key" } } },
    ]);
    const empty = await post("/v1/test/needs-key", JSON.stringify({ key: "" }));
    expect(empty.status).toBe(400);
    expect(await empty.json()).toMatchObject({ code: "InputValidationError", errors: [{ propertyPath: "key" }] });
    const given = await post("/v1/test/needs-key", JSON.stringify({ key: "k" }));
    expect(await given.json()).toEqual({ data: { data: { key: "k" } } });
  });

  test("a thrown OperationError is data.error in an HTTP 200", async () => {
    const response = await post("/v1/test/refuse", "{}");
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({
      data: { error: { statusCode: 409, message: "same user already has a pending request" } },
    });
  });

  test("a returned refusal carries its code, also on a flat route", async () => {
    expect(await (await post("/v1/test/fail", "{}")).json()).toEqual({
      data: { error: { statusCode: 403, message: "gate not allowed for this key", code: "gate_not_allowed" } },
    });
  });

  test("a business service's refusal is mapped by its Connect code", async () => {
    expect(await (await post("/v1/test/upstream", "{}")).json()).toEqual({
      data: { error: { statusCode: 404, message: "no proposal with that request_id" } },
    });
  });

  test("an unhandled failure is HTTP 500 {message: internal error}", async () => {
    const response = await post("/v1/test/crash", "{}");
    expect(response.status).toBe(500);
    expect(await response.json()).toEqual({ message: "internal error" });
    expect(response.headers.get("cache-control")).toBe("no-store");
    expect(response.headers.get("x-content-type-options")).toBe("nosniff");
    const logged = logger.entries.find((e) => e.msg === "unhandled failure");
    expect(logged).toMatchObject({ level: "error", operation: "crash", status: 500 });
    expect((logged!.error as Error).message).toBe("cannot read properties of undefined");
  });
});

describe("authenticate", () => {
  test("no Bearer prefix is data.error 401 with only a message", async () => {
    for (const authorization of [undefined, "svc_dev_good", "Basic svc_dev_good"]) {
      const response = await post("/v1/test/whoami", "{}", authorization ? { authorization } : {});
      expect(response.status).toBe(200);
      const { data } = await response.json();
      expect(Object.keys(data.error).sort()).toEqual(["message", "statusCode"]);
      expect(data.error.statusCode).toBe(401);
    }
  });

  test("a route's statusFor decides a refusal's status", async () => {
    const { data } = await (await post("/v1/test/whoami", "{}", { authorization: "Bearer svc_dev_bad" })).json();
    expect(data.error).toEqual({ statusCode: 403, message: "the API key is not valid" });
  });

  test("authentication runs before validation, and the caller reaches the handler", async () => {
    const refused = await (await post("/v1/test/whoami", "{}")).json();
    expect(refused.data.error.statusCode).toBe(401);
    const response = await post("/v1/test/whoami", JSON.stringify({ name: "x" }), {
      authorization: "Bearer svc_dev_good",
    });
    expect(await response.json()).toEqual({
      data: { data: { organization_id: "org-1" } },
      _rateLimit: { scope: "bs_test", after: "ok" },
    });
  });

  test("a stage in the rate-limit slot adds headers and extras, or answers on its own", async () => {
    const passed = await post("/v1/test/whoami", JSON.stringify({}), { authorization: "Bearer svc_dev_good" });
    expect(passed.status).toBe(400);
    expect(passed.headers.get("x-test-stage")).toBe("ran");
    expect((await passed.json())._rateLimit).toEqual({ scope: "bs_test", after: "invalid" });
    const blocked = await post("/v1/test/whoami", JSON.stringify({ name: "x" }), {
      authorization: "Bearer svc_dev_good",
      "x-test-blocked": "1",
    });
    expect(blocked.status).toBe(403);
    expect(await blocked.json()).toEqual({ errors: [{ message: "rate limit exceeded", code: "RATE_LIMITED" }] });
  });
});

describe("paths", () => {
  test("an unknown operation is a plain HTTP 404 naming it", async () => {
    const response = await post("/v1/sdk/nothing", "{}");
    expect(response.status).toBe(404);
    expect(await response.json()).toEqual({ error: "not_found", message: "no such operation: POST /v1/sdk/nothing" });
    expect((await fetch(`${server.url}/elsewhere`)).status).toBe(404);
  });

  test("a known operation with another method is 405 with Allow", async () => {
    const response = await fetch(`${server.url}/v1/test/echo`);
    expect(response.status).toBe(405);
    expect(response.headers.get("allow")).toBe("POST");
    expect(await response.json()).toEqual({
      error: "method_not_allowed",
      message: "/v1/test/echo takes POST, not GET",
    });
  });

  test("a raw route answers GET and HEAD outside the envelope, and no stage runs for it", async () => {
    const page = await fetch(`${server.url}/raw/page`);
    expect(page.status).toBe(200);
    expect(["content-type", "cache-control", "content-length"].map((name) => page.headers.get(name))).toEqual([
      "text/plain",
      "no-store",
      "4",
    ]);
    expect(page.headers.get("x-test-stage")).toBeNull();
    expect(await page.text()).toBe("page");
    const head = await fetch(`${server.url}/raw/page`, { method: "HEAD" });
    expect([head.status, head.headers.get("content-length"), await head.text()]).toEqual([200, "4", ""]);
  });

  test("a raw route with a pattern answers every path it matches, with the reply it chooses", async () => {
    const file = await fetch(`${server.url}/v1/files/a/b.txt?q=1`);
    expect([file.status, await file.json()]).toEqual([200, { file: "/v1/files/a/b.txt", q: "1" }]);
    const missing = await fetch(`${server.url}/v1/files/b.png`);
    expect([missing.status, await missing.json()]).toEqual([404, { error: "not_found", message: "no such file" }]);
  });

  test("a raw route with another method is the same 405 as an operation's", async () => {
    for (const path of ["/raw/page", "/v1/files/b.txt"]) {
      const response = await post(path, "{}");
      expect(response.status).toBe(405);
      expect(response.headers.get("allow")).toBe("GET, HEAD");
      expect(await response.json()).toEqual({
        error: "method_not_allowed",
        message: `${path} takes GET, HEAD, not POST`,
      });
    }
    expect((await fetch(`${server.url}/raw/page`, { method: "OPTIONS" })).status).toBe(405);
  });

  test("two routes for one method and path are refused at start", async () => {
    const start = (raw: RawRoute[]) =>
      startPublicServer({
        host: "127.0.0.1",
        port: 0,
        routes,
        rawRoutes: raw,
        stages: [handleStage],
        services: {} as GatewayServices,
        clock: new ManualClock("2026-10-20T12:00:00Z"),
        logger,
        ready: async () => {},
      });
    const clash: RawRoute = { path: "/v1/test/status", method: "GET", serve: () => jsonReply(200, {}) };
    await expect(start([clash])).rejects.toThrow("two routes for GET /v1/test/status");
  });

  test("/healthz and /readyz answer", async () => {
    expect(await (await fetch(`${server.url}/healthz`)).json()).toEqual({ status: "ok", service: "gateway" });
    expect(await (await fetch(`${server.url}/readyz`)).json()).toEqual({ status: "ready", service: "gateway" });
  });
});
