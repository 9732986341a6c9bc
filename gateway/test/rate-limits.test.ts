import { createHash, randomBytes } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import { type Database, ManualClock, openDatabase, openStatementPool } from "@svc/platform";
import { CallerSchema, CredentialKind, Environment } from "@svc/proto/common/v1/caller_pb.js";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createTestDatabase, type TestDatabase } from "../../test/harness/index.ts";
import { apiKeyResolvers, authenticateStage } from "../src/credentials/authenticate.ts";
import { CredentialDirectory } from "../src/credentials/directory.ts";
import { entities } from "../src/credentials/entities.ts";
import type { CredentialResolver } from "../src/credentials/resolver.ts";
import { parseStage } from "../src/http/parse.ts";
import { handleStage, validateStage } from "../src/http/pipeline.ts";
import { type RunningServer, startPublicServer } from "../src/http/public-server.ts";
import { ok } from "../src/http/route.ts";
import { migrations } from "../src/migrations/index.ts";
import { KeyLimits } from "../src/rate-limits/key-limits.ts";
import { rateLimitStage } from "../src/rate-limits/rate-limit-stage.ts";
import { decideRateLimits, RateLimiter } from "../src/rate-limits/rate-limiter.ts";
import { tiers } from "../src/rate-limits/rate-tiers.ts";
import type { GatewayServices } from "../src/services.ts";
import { defineRoute } from "../src/services.ts";
import { memoryLogger } from "./memory-logger.ts";

/**
 * The rate limiter over real HTTP and the real PostgreSQL: the tier table bucket by bucket, filled and
 * refused with the exact body, windows moved by the clock. Full daily and hourly windows are reached by
 * setting the counter just below the limit, as if the earlier requests had been made.
 */

// 12:00:03 UTC: the 10 s window resets in 7 s, the minute in 57 s, the hour in 3597 s, the day in 43197 s.
const clock = new ManualClock("2026-10-20T12:00:03Z");
const upgradeUrl = "https://console.svc.test/upgrade";
const leaseTtlMs = 60_000;

let database: TestDatabase;
let orm: Database;
let directory: CredentialDirectory;
let limiter: RateLimiter;
let pool: ReturnType<typeof openStatementPool>;
let server: RunningServer;
let organizationId: string;
/** Runs of each handler: a refused request must run none. */
const runs = new Map<string, number>();
/** Requests of /test/hold wait here until the test lets them finish. */
let holds: (() => void)[] = [];
/** The stage's releases of in_flight slots wait for this while a test holds them back. */
let releasesHeld: Promise<void> | undefined;

const counted = (operationId: string) => runs.set(operationId, (runs.get(operationId) ?? 0) + 1);

const grantTokens: CredentialResolver = {
  kind: "grant_token",
  recognizes: (credential) => credential.startsWith("svcs_"),
  resolve: async (credential) => ({
    ok: true,
    credential: {
      kind: "grant_token",
      allowedGates: [],
      caller: create(CallerSchema, {
        organizationId: "org-grant",
        environment: credential.startsWith("svcs_dev") ? Environment.DEVELOPMENT : Environment.PRODUCTION,
        credentialId: "session-of-the-token",
        credentialKind: CredentialKind.GRANT_TOKEN,
      }),
    },
  }),
};

const routes = [
  defineRoute({
    operationId: "keyed",
    method: "POST",
    path: "/test/keyed",
    summary: "any credential",
    auth: { accepts: ["secret_key", "site_key", "grant_token"] },
    input: { type: "object", properties: { name: { type: "string" } } },
    envelope: "nested",
    handle: async () => {
      counted("keyed");
      return ok({ done: true });
    },
  }),
  defineRoute({
    operationId: "hold",
    method: "POST",
    path: "/test/hold",
    summary: "runs until the test lets it finish",
    auth: { accepts: ["secret_key"] },
    input: { type: "object" },
    envelope: "nested",
    handle: () => new Promise((resolve) => holds.push(() => resolve(ok({ held: true })))),
  }),
  defineRoute({
    operationId: "crash",
    method: "POST",
    path: "/test/crash",
    summary: "fails unhandled",
    auth: { accepts: ["secret_key"] },
    input: { type: "object", properties: { n: { type: "integer" } } },
    envelope: "nested",
    handle: async () => {
      throw new Error("boom");
    },
  }),
  defineRoute({
    operationId: "anonymous",
    method: "POST",
    path: "/test/anonymous",
    summary: "no credential",
    auth: { accepts: [] },
    input: { type: "object" },
    envelope: "nested",
    handle: async () => {
      counted("anonymous");
      return ok({ done: true });
    },
  }),
  defineRoute({
    operationId: "exempt",
    method: "POST",
    path: "/test/exempt",
    summary: "not counted",
    auth: { accepts: ["secret_key"] },
    input: { type: "object" },
    envelope: "nested",
    rateLimit: "exempt",
    handle: async () => ok({ done: true }),
  }),
];

beforeAll(async () => {
  database = await createTestDatabase("edge_rate_limit");
  orm = await openDatabase({
    url: database.url,
    schema: "gateway",
    entities,
    migrations,
    storedDefinitions: [decideRateLimits],
    logger: memoryLogger(),
  });
  directory = new CredentialDirectory({ orm, pepper: randomBytes(32), clock });
  organizationId = (await directory.createOrganization("Limits")).id;
  const logger = memoryLogger();
  pool = openStatementPool({ url: database.url, schema: "gateway", max: 4, logger });
  limiter = new RateLimiter({ pool, leaseTtlMs });
  server = await startPublicServer({
    host: "127.0.0.1",
    port: 0,
    routes,
    stages: [
      parseStage,
      authenticateStage([...apiKeyResolvers(directory, clock), grantTokens]),
      rateLimitStage({
        limiter: {
          take: (plan, now) => limiter.take(plan, now),
          decide: (plan, now, check) => limiter.decide(plan, now, check),
          release: async (leaseId) => {
            await releasesHeld;
            return limiter.release(leaseId);
          },
        },
        upgradeUrl,
        anonymousPerMinute: 5,
        trustedProxyHops: 1,
        logger,
      }),
      validateStage,
      handleStage,
    ],
    services: {} as GatewayServices,
    clock,
    logger,
    ready: async () => {},
  });
});
afterAll(async () => {
  await server?.stop();
  await pool?.end();
  await orm?.close(true);
  await database?.drop();
});

async function newKey(type: "secret" | "site", environment: "development" | "production") {
  const { key, record } = await directory.createKey({
    organizationId,
    environment,
    type,
    allowedOrigins: type === "site" ? ["https://shop.example"] : [],
    allowedGates: [],
  });
  return { key, id: record.id };
}

interface Answer {
  status: number;
  // biome-ignore lint/suspicious/noExplicitAny: a JSON reply, read by each case's assertions in the shape that case expects.
  body: any;
  headers: Headers;
}

async function call(
  path: string,
  options: { key?: string; ip?: string; headers?: Record<string, string>; body?: unknown; signal?: AbortSignal } = {},
): Promise<Answer> {
  const response = await fetch(`${server.url}/v1${path}`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "x-forwarded-for": options.ip ?? "198.51.100.1",
      ...(options.key && { authorization: `Bearer ${options.key}` }),
      ...(options.key?.startsWith("pk_") && { origin: "https://shop.example" }),
      ...options.headers,
    },
    body: JSON.stringify(options.body ?? {}),
    ...(options.signal && { signal: options.signal }),
  });
  return { status: response.status, body: await response.json(), headers: response.headers };
}

const times = async (n: number, send: () => Promise<Answer>): Promise<Answer[]> => {
  const answers: Answer[] = [];
  for (let i = 0; i < n; i++) answers.push(await send());
  return answers;
};

/** Sets a counter of the current window as if `count` requests had been counted in it. */
const seed = (subject: string, bucket: string, count: number) =>
  orm.em
    .fork()
    .execute(`update rate_counters set count = ? where subject = ? and bucket = ?`, [count, subject, bucket]);

const counterRows = async () =>
  Number((await orm.em.fork().execute<{ n: string }[]>(`select count(*) as n from rate_counters`))[0]!.n);

describe("development secret key (bs_test)", () => {
  test("per_minute (the spec's burst: 30 per 10 s) fills, refuses with the exact body, and resets with the clock", async () => {
    const { key } = await newKey("secret", "development");
    const before = runs.get("keyed") ?? 0;
    const passed = await times(30, () => call("/test/keyed", { key }));
    expect(passed.map((a) => a.status)).toEqual(Array(30).fill(200));
    expect(passed[0]!.body).toEqual({
      data: { data: { done: true } },
      _rateLimit: {
        scope: "bs_test",
        primary: { bucket: "per_minute", limit: 30, remaining: 29, resetIn: 7 },
        buckets: {
          per_minute: { limit: 30, remaining: 29, resetIn: 7 },
          hourly: { limit: 300, remaining: 299, resetIn: 3597 },
          daily: { limit: 2000, remaining: 1999, resetIn: 43197 },
          in_flight: { limit: 10, remaining: 9, resetIn: 1 },
        },
      },
    });
    expect(passed[0]!.headers.get("ratelimit-policy")).toBe(
      '"per_minute";q=30;w=10, "hourly";q=300;w=3600, "daily";q=2000;w=86400',
    );
    expect(passed[0]!.headers.get("ratelimit")).toBe(
      '"per_minute";r=29;t=7, "hourly";r=299;t=3597, "daily";r=1999;t=43197',
    );

    const refused = await call("/test/keyed", { key });
    expect(refused.status).toBe(403);
    expect(refused.headers.get("retry-after")).toBeNull();
    const message = "rate limit exceeded: per_minute allows 30 requests per 10 s; retry in 7 s";
    expect(refused.body).toEqual({
      data: {
        error: {
          statusCode: 429,
          message,
          code: "RATE_LIMITED",
          reason: "rate",
          bucket: "per_minute",
          retry_in: 7,
          limits: {
            per_minute: { limit: 30, window_seconds: 10 },
            hourly: { limit: 300, window_seconds: 3600 },
            daily: { limit: 2000, window_seconds: 86400 },
            in_flight: { limit: 10 },
          },
          upgrade_url: upgradeUrl,
        },
      },
      errors: [{ message, code: "RATE_LIMITED" }],
      _rateLimit: {
        scope: "bs_test",
        primary: { bucket: "per_minute", limit: 30, remaining: 0, resetIn: 7 },
        buckets: {
          per_minute: { limit: 30, remaining: 0, resetIn: 7 },
          hourly: { limit: 300, remaining: 270, resetIn: 3597 },
          daily: { limit: 2000, remaining: 1970, resetIn: 43197 },
          in_flight: { limit: 10, remaining: 10, resetIn: 1 },
        },
      },
    });
    expect(refused.headers.get("ratelimit")).toBe(
      '"per_minute";r=0;t=7, "hourly";r=270;t=3597, "daily";r=1970;t=43197',
    );
    expect(runs.get("keyed")).toBe(before + 30);

    clock.advance(7000);
    try {
      const next = await call("/test/keyed", { key });
      expect(next.status).toBe(200);
      // The refused request consumed nothing: 30 counted in the hour, now 31.
      expect(next.body._rateLimit.buckets).toMatchObject({
        per_minute: { remaining: 29, resetIn: 10 },
        hourly: { remaining: 269 },
      });
    } finally {
      clock.advance(-7000);
    }
  });

  test.each([
    ["hourly", 300, 3597],
    ["daily", 2000, 43197],
  ] as const)("%s fills and refuses, and the refusal consumes no other bucket", async (bucket, limit, resetIn) => {
    const { key, id } = await newKey("secret", "development");
    await call("/test/keyed", { key });
    await seed(`secret_key:${id}`, bucket, limit - 1);
    expect((await call("/test/keyed", { key })).body._rateLimit.buckets[bucket]).toEqual({
      limit,
      remaining: 0,
      resetIn,
    });
    const refused = await call("/test/keyed", { key });
    expect(refused.status).toBe(403);
    expect(refused.body.data.error).toMatchObject({
      statusCode: 429,
      code: "RATE_LIMITED",
      reason: "rate",
      bucket,
      retry_in: resetIn,
    });
    expect(refused.body.errors).toEqual([
      {
        message: `rate limit exceeded: ${bucket} allows ${limit} requests per ${bucket === "hourly" ? 3600 : 86400} s; retry in ${resetIn} s`,
        code: "RATE_LIMITED",
      },
    ]);
    expect(refused.body._rateLimit.primary).toEqual({ bucket, limit, remaining: 0, resetIn });
    expect(refused.body._rateLimit.buckets.per_minute.remaining).toBe(28);
  });

  test("in_flight: ten at once run, the eleventh is refused as concurrent, and a finished request frees its slot", async () => {
    const { key } = await newKey("secret", "development");
    holds = [];
    const held = Array.from({ length: 10 }, () => call("/test/hold", { key }));
    await expect.poll(() => holds.length).toBe(10);
    const refused = await call("/test/hold", { key });
    expect(refused.status).toBe(403);
    const message = "too many requests at once: at most 10 may run together; retry in 1 s";
    expect(refused.body.data.error).toMatchObject({
      statusCode: 429,
      message,
      reason: "concurrent",
      bucket: "in_flight",
      retry_in: 1,
    });
    expect(refused.body._rateLimit.primary).toEqual({ bucket: "in_flight", limit: 10, remaining: 0, resetIn: 1 });
    // Refused for concurrency, it counted in no window either.
    expect(refused.body._rateLimit.buckets.per_minute).toEqual({ limit: 30, remaining: 20, resetIn: 7 });

    // The handler that arrived first finishes: not necessarily the request sent first.
    holds.shift()!();
    await Promise.race(held);
    const admitted = call("/test/hold", { key });
    await expect.poll(() => holds.length).toBe(10);
    for (const finish of holds.splice(0)) finish();
    expect((await Promise.all([...held, admitted])).map((a) => a.status)).toEqual(Array(11).fill(200));
  });

  test("an answer does not wait for its slot's release; the key's next request here waits for it, and is admitted", async () => {
    const { key, id } = await newKey("secret", "development");
    await new KeyLimits({ orm, clock }).set(id, "in_flight", 1);
    let letGo = () => {};
    releasesHeld = new Promise((resolve) => {
      letGo = resolve;
    });
    try {
      // Answered while its release is still held back (before, the answer waited for it).
      expect((await call("/test/keyed", { key })).status).toBe(200);
      const next = call("/test/keyed", { key });
      letGo();
      // Taken after the release: the one slot is free, not "concurrent".
      expect((await next).status).toBe(200);
    } finally {
      releasesHeld = undefined;
      letGo();
    }
  });

  test("in_flight slots are given back after failures, invalid input and clients that went away", async () => {
    const { key } = await newKey("secret", "development");
    for (let i = 0; i < 6; i++) {
      expect((await call("/test/crash", { key })).status).toBe(500);
      expect((await call("/test/crash", { key, body: { n: "x" } })).status).toBe(400);
    }
    holds = [];
    const aborts = Array.from({ length: 10 }, () => new AbortController());
    const gone = aborts.map((abort) => call("/test/hold", { key, signal: abort.signal }).catch(() => "aborted"));
    await expect.poll(() => holds.length).toBe(10);
    for (const abort of aborts) abort.abort();
    expect(await Promise.all(gone)).toEqual(Array(10).fill("aborted"));
    // The work still runs after its client left, so its slot is still taken...
    expect((await call("/test/hold", { key })).status).toBe(403);
    // ...until it finishes.
    for (const finish of holds.splice(0)) finish();
    await expect.poll(async () => (await call("/test/crash", { key })).status).toBe(500);
  });

  test("a replica that died mid-request leaks its slots only until their leases expire", async () => {
    const { key, id } = await newKey("secret", "development");
    const plan = { tier: tiers.secretDevelopment, subject: `secret_key:${id}`, clientIp: "198.51.100.1", keyId: id };
    for (let i = 0; i < 10; i++) expect((await limiter.take(plan, clock.now())).leaseId).toBeDefined();
    expect((await call("/test/keyed", { key })).body.data.error.reason).toBe("concurrent");
    clock.advance(leaseTtlMs);
    try {
      expect((await call("/test/keyed", { key })).status).toBe(200);
    } finally {
      clock.advance(-leaseTtlMs);
    }
  });
});

describe("production secret key (bs_prod)", () => {
  test("requests decided together are decided in order, each all or nothing, and each reads the counts before it", async () => {
    const near = await newKey("secret", "production");
    const clear = await newKey("secret", "production");
    const planOf = ({ id }: { id: string }) => ({
      tier: tiers.secretProduction,
      subject: `secret_key:${id}`,
      clientIp: "198.51.100.1",
      keyId: id,
    });
    await limiter.take(planOf(near), clock.now());
    await limiter.take(planOf(clear), clock.now());
    await seed(`secret_key:${near.id}`, "per_minute", 58);

    // Made in one turn, so they leave in one statement.
    const decisions = await Promise.all(
      [near, clear, near, near, clear].map((key) => limiter.take(planOf(key), clock.now())),
    );
    const perMinute = (i: number) => decisions[i]!.buckets.find((b) => b.name === "per_minute")!;
    const hourly = (i: number) => decisions[i]!.buckets.find((b) => b.name === "hourly")!;
    expect(decisions.map((d) => d.allowed)).toEqual([true, true, true, false, true]);
    expect([0, 2, 3].map((i) => perMinute(i).remaining)).toEqual([1, 0, 0]);
    expect([1, 4].map((i) => perMinute(i).remaining)).toEqual([58, 57]);
    expect(perMinute(3).full).toBe(true);
    expect([0, 2, 3].map((i) => hourly(i))).toMatchObject([
      { remaining: 1998, full: false },
      { remaining: 1997, full: false },
      { remaining: 1997, full: false },
    ]);

    const counts = await orm.em
      .fork()
      .execute<{ bucket: string; count: number }[]>(
        `select bucket, count from rate_counters where subject = ? order by bucket`,
        [`secret_key:${near.id}`],
      );
    expect(counts).toEqual([
      { bucket: "daily", count: 3 },
      { bucket: "hourly", count: 3 },
      { bucket: "per_minute", count: 60 },
    ]);
  });

  test("per_minute 60 fills and refuses with the exact body, without data.error", async () => {
    const { key } = await newKey("secret", "production");
    expect((await times(60, () => call("/test/keyed", { key }))).every((a) => a.status === 200)).toBe(true);
    const refused = await call("/test/keyed", { key });
    expect(refused.status).toBe(403);
    expect(refused.body).toEqual({
      errors: [
        { message: "rate limit exceeded: per_minute allows 60 requests per 60 s; retry in 57 s", code: "RATE_LIMITED" },
      ],
      _rateLimit: {
        scope: "bs_prod",
        primary: { bucket: "per_minute", limit: 60, remaining: 0, resetIn: 57 },
        buckets: {
          per_minute: { limit: 60, remaining: 0, resetIn: 57 },
          hourly: { limit: 2000, remaining: 1940, resetIn: 3597 },
          daily: { limit: 25000, remaining: 24940, resetIn: 43197 },
        },
      },
    });
  });

  test.each([
    ["hourly", 2000, 3597],
    ["daily", 25000, 43197],
  ] as const)("%s fills and refuses", async (bucket, limit, resetIn) => {
    const { key, id } = await newKey("secret", "production");
    await call("/test/keyed", { key });
    await seed(`secret_key:${id}`, bucket, limit);
    const refused = await call("/test/keyed", { key });
    expect(refused.status).toBe(403);
    expect(refused.body.data).toBeUndefined();
    expect(refused.body._rateLimit.primary).toEqual({ bucket, limit, remaining: 0, resetIn });
    expect(refused.body._rateLimit.buckets.per_minute.remaining).toBe(59);
  });

  test("a raised limit holds from the next request; 0 returns the default", async () => {
    const { key, id } = await newKey("secret", "production");
    const limits = new KeyLimits({ orm, clock });
    const set = await limits.set(id, "per_minute", 62);
    expect(set).toEqual([
      { bucket: "per_minute", limit: 62, windowSeconds: 60, raised: true },
      { bucket: "hourly", limit: 2000, windowSeconds: 3600, raised: false },
      { bucket: "daily", limit: 25000, windowSeconds: 86400, raised: false },
    ]);
    expect((await times(62, () => call("/test/keyed", { key }))).every((a) => a.status === 200)).toBe(true);
    const refused = await call("/test/keyed", { key });
    expect(refused.body._rateLimit.primary).toEqual({ bucket: "per_minute", limit: 62, remaining: 0, resetIn: 57 });
    expect((await limits.set(id, "per_minute", 0))[0]).toEqual({
      bucket: "per_minute",
      limit: 60,
      windowSeconds: 60,
      raised: false,
    });
    await expect(limits.set(id, "in_flight", 5)).rejects.toThrow(
      "a production secret key has the buckets per_minute, hourly, daily, not in_flight",
    );
    await expect(limits.set(crypto.randomUUID(), "daily", 5)).rejects.toThrow("no key");
  });

  test("a development key's burst bucket is its per_minute, and in_flight can be lowered", async () => {
    const { key, id } = await newKey("secret", "development");
    const limits = new KeyLimits({ orm, clock });
    expect((await limits.set(id, "burst", 40))[0]).toEqual({
      bucket: "per_minute",
      limit: 40,
      windowSeconds: 10,
      raised: true,
    });
    await limits.set(id, "in_flight", 1);
    holds = [];
    const held = call("/test/hold", { key });
    await expect.poll(() => holds.length).toBe(1);
    const refused = await call("/test/keyed", { key });
    expect(refused.body.data.error).toMatchObject({
      reason: "concurrent",
      limits: { per_minute: { limit: 40, window_seconds: 10 }, in_flight: { limit: 1 } },
    });
    holds.shift()!();
    expect((await held).status).toBe(200);
  });
});

describe("site keys", () => {
  test("per_ip: 20 per minute for each client IP of a key; another IP still passes", async () => {
    const { key } = await newKey("site", "production");
    expect(
      (await times(20, () => call("/test/keyed", { key, ip: "203.0.113.7" }))).every((a) => a.status === 200),
    ).toBe(true);
    const refused = await call("/test/keyed", { key, ip: "203.0.113.7" });
    expect(refused.status).toBe(403);
    expect(refused.body).toEqual({
      errors: [
        { message: "rate limit exceeded: per_ip allows 20 requests per 60 s; retry in 57 s", code: "RATE_LIMITED" },
      ],
      _rateLimit: {
        scope: "pk_live",
        primary: { bucket: "per_ip", limit: 20, remaining: 0, resetIn: 57 },
        buckets: {
          per_minute: { limit: 120, remaining: 100, resetIn: 57 },
          daily: { limit: 25000, remaining: 24980, resetIn: 43197 },
          per_ip: { limit: 20, remaining: 0, resetIn: 57 },
        },
      },
    });
    const other = await call("/test/keyed", { key, ip: "203.0.113.8" });
    expect(other.status).toBe(200);
    expect(other.headers.get("ratelimit")).toBe('"per_minute";r=99;t=57, "daily";r=24979;t=43197, "per_ip";r=19;t=57');
  });

  test("per_minute: 120 per key across client IPs", async () => {
    const { key } = await newKey("site", "production");
    for (let ip = 1; ip <= 6; ip++) {
      expect(
        (await times(20, () => call("/test/keyed", { key, ip: `192.0.2.${ip}` }))).every((a) => a.status === 200),
      ).toBe(true);
    }
    const refused = await call("/test/keyed", { key, ip: "192.0.2.7" });
    expect(refused.status).toBe(403);
    expect(refused.body._rateLimit.primary).toEqual({ bucket: "per_minute", limit: 120, remaining: 0, resetIn: 57 });
    // Refused by the key's bucket, the new IP's own bucket stayed untouched.
    expect(refused.body._rateLimit.buckets.per_ip).toEqual({ limit: 20, remaining: 20, resetIn: 57 });
  });

  test("daily: 25,000 per key", async () => {
    const { key, id } = await newKey("site", "development");
    await call("/test/keyed", { key });
    await seed(`site_key:${id}`, "daily", 25_000);
    const refused = await call("/test/keyed", { key });
    expect(refused.body).toMatchObject({
      errors: [{ code: "RATE_LIMITED" }],
      _rateLimit: { scope: "pk_test", primary: { bucket: "daily", limit: 25000, remaining: 0, resetIn: 43197 } },
    });
  });

  test("a live site key reports _rateLimit only when asked; a test site key always; both send the headers", async () => {
    const live = await newKey("site", "production");
    const quiet = await call("/test/keyed", { key: live.key });
    expect(quiet.body).toEqual({ data: { data: { done: true } } });
    expect(quiet.headers.get("ratelimit-policy")).toBe(
      '"per_minute";q=120;w=60, "daily";q=25000;w=86400, "per_ip";q=20;w=60',
    );
    const asked = await call("/test/keyed", { key: live.key, headers: { "x-svc-include-ratelimit": "true" } });
    expect(asked.body._rateLimit).toMatchObject({ scope: "pk_live", primary: { bucket: "per_ip", remaining: 18 } });
    expect(
      (await call("/test/keyed", { key: live.key, headers: { "x-svc-include-ratelimit": "false" } })).body._rateLimit,
    ).toBeUndefined();
    const test_ = await newKey("site", "development");
    expect((await call("/test/keyed", { key: test_.key })).body._rateLimit.scope).toBe("pk_test");
  });
});

describe("grant tokens, requests without a credential, and refusals before counting", () => {
  test("grant tokens have the production buckets, counted per token", async () => {
    const token = `svcs_dev_${randomBytes(8).toString("hex")}`;
    const answers = await times(61, () => call("/test/keyed", { key: token }));
    expect(answers[0]!.body._rateLimit).toMatchObject({
      scope: "bss_test",
      buckets: { per_minute: { limit: 60 }, hourly: { limit: 2000 }, daily: { limit: 25000 } },
    });
    expect(answers[60]!.status).toBe(403);
    expect(answers[60]!.body.data).toBeUndefined();
    expect(answers[60]!.body._rateLimit.primary.bucket).toBe("per_minute");
    const another = await call("/test/keyed", { key: `svcs_prod_${randomBytes(8).toString("hex")}` });
    expect(another.body._rateLimit).toMatchObject({ scope: "bss_prod", primary: { remaining: 59 } });
  });

  test("operations without a credential are counted per client IP and report only on a block", async () => {
    const answers = await times(5, () => call("/test/anonymous", { ip: "100.64.0.1" }));
    expect(answers[4]!.body).toEqual({ data: { data: { done: true } } });
    expect(answers[4]!.headers.get("ratelimit")).toBe('"per_minute";r=0;t=57');
    const before = runs.get("anonymous");
    const refused = await call("/test/anonymous", { ip: "100.64.0.1" });
    expect(refused.status).toBe(403);
    expect(refused.body).toEqual({
      errors: [
        { message: "rate limit exceeded: per_minute allows 5 requests per 60 s; retry in 57 s", code: "RATE_LIMITED" },
      ],
      _rateLimit: {
        scope: "ip",
        primary: { bucket: "per_minute", limit: 5, remaining: 0, resetIn: 57 },
        buckets: { per_minute: { limit: 5, remaining: 0, resetIn: 57 } },
      },
    });
    expect(runs.get("anonymous")).toBe(before);
    expect((await call("/test/anonymous", { ip: "100.64.0.2" })).status).toBe(200);
  });

  test("a refused credential and an exempt route count nothing", async () => {
    const rows = await counterRows();
    const refused = await call("/test/keyed", { key: `svc_dev_${"A".repeat(32)}` });
    expect(refused.body).toEqual({ data: { error: { statusCode: 401, message: "the API key is not valid" } } });
    const { key } = await newKey("secret", "development");
    const exempt = await call("/test/exempt", { key });
    expect(exempt.body).toEqual({ data: { data: { done: true } } });
    expect(exempt.headers.get("ratelimit")).toBeNull();
    expect(await counterRows()).toBe(rows);
  });
});

describe("the decision's stored function", () => {
  test("decide_rate_limits and rate_counters_overflowed are the text of decide-rate-limits.sql; the superseded take_rate_limits is gone", async () => {
    const { rows } = await pool.query<{ name: string; sha256: string }>(
      "select name, sha256 from stored_definitions order by name",
    );
    expect(rows).toEqual([
      { name: "decide-rate-limits", sha256: createHash("sha256").update(decideRateLimits.sql).digest("hex") },
    ]);
    const functions = await pool.query<{ proname: string }>(
      "select proname from pg_proc where pronamespace = 'gateway'::regnamespace order by proname",
    );
    expect(functions.rows.map((row) => row.proname)).toEqual(["decide_rate_limits", "rate_counters_overflowed"]);
  });
});
