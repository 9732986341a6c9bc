import { create } from "@bufbuild/protobuf";
import { ManualClock } from "@svc/platform";
import { CallerSchema } from "@svc/proto/common/v1/caller_pb.js";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { authenticateStage } from "../src/credentials/authenticate.ts";
import type { CredentialResolver } from "../src/credentials/resolver.ts";
import { handleStage, type Stage } from "../src/http/pipeline.ts";
import { type RunningServer, startPublicServer } from "../src/http/public-server.ts";
import { ok } from "../src/http/route.ts";
import type { GatewayServices } from "../src/services.ts";
import { defineRoute } from "../src/services.ts";
import { memoryLogger } from "./memory-logger.ts";

/**
 * CORS in the public server with a route table of its own: a preflight is answered before any stage
 * runs and without touching a service; actual answers name the origin only for a site key that
 * authenticated from it, whatever the outcome. (Through the real gateway and a browser: test/e2e/edge-cors.test.ts.)
 */
const shop = "https://shop.example";

const routes = [
  defineRoute({
    operationId: "session",
    method: "POST",
    path: "/test/session",
    summary: "takes a site key or a secret key",
    auth: { accepts: ["site_key", "secret_key"] },
    input: { type: "object" },
    envelope: "nested",
    handle: async () => ok({ done: true }),
  }),
  defineRoute({
    operationId: "serverOnly",
    method: "POST",
    path: "/test/server-only",
    summary: "takes a secret key only",
    auth: { accepts: ["secret_key"] },
    input: { type: "object" },
    envelope: "nested",
    handle: async () => ok({ done: true }),
  }),
];

const caller = create(CallerSchema, { organizationId: "org-1" });
const keys: CredentialResolver[] = [
  {
    kind: "site_key",
    recognizes: (c) => c.startsWith("pk_test_"),
    resolve: async (_credential, { origin }) =>
      origin === shop
        ? { ok: true, credential: { kind: "site_key", allowedGates: [], caller, origin } }
        : { ok: false, failure: "origin_not_allowed", message: `origin ${origin} is not allowed for this site key` },
  },
  {
    kind: "secret_key",
    recognizes: (c) => c.startsWith("svc_dev_"),
    resolve: async () => ({ ok: true, credential: { kind: "secret_key", allowedGates: [], caller } }),
  },
];

const stagesRun: string[] = [];
const record: Stage = {
  name: "record",
  run(ctx, next) {
    stagesRun.push(ctx.route.operationId);
    return next();
  },
};
/** Stands where the rate limiter is: it may answer on its own after authentication. */
const limiter: Stage = {
  name: "rate limit",
  async run(ctx, next) {
    if (ctx.headers["x-test-blocked"])
      return {
        kind: "http",
        status: 403,
        body: { errors: [{ message: "rate limit exceeded", code: "RATE_LIMITED" }] },
      };
    return next();
  },
};
const servicesTouched: string[] = [];
const services = new Proxy({} as GatewayServices, {
  get(_target, name) {
    servicesTouched.push(String(name));
    return undefined;
  },
});

let server: RunningServer;
const logger = memoryLogger();

beforeAll(async () => {
  server = await startPublicServer({
    host: "127.0.0.1",
    port: 0,
    routes,
    stages: [record, authenticateStage(keys), limiter, handleStage],
    services,
    clock: new ManualClock("2026-10-20T12:00:00Z"),
    logger,
    ready: async () => {},
  });
});
afterAll(() => server?.stop());

const call = (path: string, init: { method?: string; headers?: Record<string, string> }) =>
  fetch(`${server.url}/v1${path}`, { method: init.method ?? "POST", headers: init.headers });
/** The CORS headers of an answer, by lower-case name. */
const corsHeaders = (response: Response) =>
  Object.fromEntries(
    [
      "access-control-allow-origin",
      "access-control-allow-methods",
      "access-control-allow-headers",
      "access-control-max-age",
      "access-control-expose-headers",
      "access-control-allow-credentials",
      "vary",
    ].flatMap((name) => {
      const value = response.headers.get(name);
      return value === null ? [] : [[name, value]];
    }),
  );

describe("a preflight", () => {
  test("is answered before any stage, without a service, and is not logged as a request", async () => {
    const [stages, touched, logged] = [stagesRun.length, servicesTouched.length, logger.entries.length];
    const answer = await call("/test/session", {
      method: "OPTIONS",
      headers: { origin: "https://anyone.example", "access-control-request-method": "POST" },
    });
    expect(answer.status).toBe(204);
    expect(corsHeaders(answer)).toEqual({
      "access-control-allow-origin": "https://anyone.example",
      "access-control-allow-methods": "POST",
      "access-control-allow-headers": "Authorization, Content-Type, x-svc-include-ratelimit, Idempotency-Key",
      "access-control-max-age": "7200",
      vary: "Origin",
    });
    expect(answer.headers.get("allow")).toBe("POST, OPTIONS");
    expect([stagesRun.length, servicesTouched.length, logger.entries.length]).toEqual([stages, touched, logged]);
  });

  test("without an Origin is a plain OPTIONS: what the path allows, nothing for CORS", async () => {
    const answer = await call("/test/session", { method: "OPTIONS" });
    expect(answer.status).toBe(204);
    expect(answer.headers.get("allow")).toBe("POST, OPTIONS");
    expect(corsHeaders(answer)).toEqual({});
  });

  test("of an operation that takes no site key is a 405 that allows no browser", async () => {
    const answer = await call("/test/server-only", {
      method: "OPTIONS",
      headers: { origin: shop, "access-control-request-method": "POST" },
    });
    expect(answer.status).toBe(405);
    expect(answer.headers.get("allow")).toBe("POST");
    expect(corsHeaders(answer)).toEqual({});
    await answer.body?.cancel();
  });
});

describe("an actual answer", () => {
  const expected = {
    "access-control-allow-origin": shop,
    "access-control-expose-headers": "RateLimit, RateLimit-Policy, Deprecation, Sunset, Link, Idempotent-Replayed",
    vary: "Origin",
  };

  test("names the origin a site key authenticated from, also when the rate limiter answers", async () => {
    const answered = await call("/test/session", { headers: { authorization: "Bearer pk_test_good", origin: shop } });
    expect(corsHeaders(answered)).toEqual(expected);
    expect((await answered.json()).data.data).toEqual({ done: true });
    const blocked = await call("/test/session", {
      headers: { authorization: "Bearer pk_test_good", origin: shop, "x-test-blocked": "1" },
    });
    expect(blocked.status).toBe(403);
    expect(corsHeaders(blocked)).toEqual(expected);
    await blocked.body?.cancel();
  });

  test("says nothing for an origin the key refuses, for a secret key or without a credential", async () => {
    const unreadable: Record<string, string>[] = [
      { authorization: "Bearer pk_test_good", origin: "https://evil.example" },
      { authorization: "Bearer svc_dev_good", origin: shop },
      { origin: shop },
    ];
    for (const headers of unreadable) {
      const answer = await call("/test/session", { headers });
      expect(answer.status).toBe(200);
      expect(corsHeaders(answer), JSON.stringify(headers)).toEqual({});
      await answer.body?.cancel();
    }
  });
});
