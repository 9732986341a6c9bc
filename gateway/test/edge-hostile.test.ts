import { connect } from "node:net";
import { ManualClock } from "@svc/platform";
import { Environment } from "@svc/proto/common/v1/caller_pb.js";
import { KeyType } from "@svc/proto/console/v1/console_pb.js";
import fc from "fast-check";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, test, vi } from "vitest";
import type { Route } from "../src/http/route.ts";
import { routes } from "../src/operations/index.ts";
import { startTestMesh, type TestMesh } from "./support.ts";

/**
 * Random and hostile bodies, query strings and headers at every public operation of the route table,
 * over raw sockets (so nothing a client library would refuse to send is left out). Every answer must
 * have one of the spec's shapes, never a 500; a request refused before it ran must change nothing.
 */

const clock = new ManualClock("2026-12-01T10:00:00Z");
let mesh: TestMesh;
let database: pg.Client;
let developmentKey: string;

beforeAll(async () => {
  mesh = await startTestMesh("edge_hostile", clock);
  database = new pg.Client({ connectionString: mesh.database.url });
  await database.connect();
  const { organizationId } = await mesh.console.createOrganization({ name: "Hostile" });
  const created = await mesh.console.createKey({
    organizationId,
    environment: Environment.DEVELOPMENT,
    type: KeyType.SECRET,
  });
  developmentKey = created.key;
  for (const bucket of ["per_minute", "hourly", "daily"])
    await mesh.console.setKeyLimits({ keyId: created.keyId, bucket, limit: 1_000_000 });
});
afterAll(async () => {
  await database?.end();
  await mesh?.stop();
});

interface RawAnswer {
  status: number;
  body: unknown;
}

/** Sends bytes as they are and reads the answer to the end (every request says Connection: close). */
function send(request: Buffer): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const socket = connect(mesh.gateway.port, "127.0.0.1");
    const chunks: Buffer[] = [];
    socket.on("data", (chunk) => chunks.push(chunk));
    socket.on("error", reject);
    socket.on("close", () => {
      const text = Buffer.concat(chunks).toString("utf8");
      const [head, ...rest] = text.split("\r\n\r\n");
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head ?? "")?.[1]);
      let body: unknown;
      try {
        body = JSON.parse(rest.join("\r\n\r\n"));
      } catch {
        body = rest.join("\r\n\r\n");
      }
      resolve({ status, body });
    });
    // Not end(): a half-closed connection may be dropped before the answer is written.
    socket.write(request);
  });
}

function httpRequest(
  method: string,
  target: string,
  headers: [string, string][],
  body: Buffer = Buffer.alloc(0),
): Buffer {
  const lines = [
    `${method} ${target} HTTP/1.1`,
    "Host: gateway.test",
    "Connection: close",
    ...headers.map(([name, value]) => `${name}: ${value}`),
  ];
  if (method === "POST") lines.push(`Content-Length: ${body.length}`);
  return Buffer.concat([Buffer.from(`${lines.join("\r\n")}\r\n\r\n`, "latin1"), body]);
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);
const errorMessages = (body: unknown): string[] =>
  (body as { errors: { message: string }[] }).errors.map((error) => error.message);
const extrasOnly = (body: Record<string, unknown>, allowed: string[]) =>
  Object.keys(body).every((key) => allowed.includes(key) || key.startsWith("_"));

/** The spec's four shapes ("Errors"): an answer in the envelope, a 400, a 403 RATE_LIMITED. A 500 is a bug here. */
function assertSpecShape(answer: RawAnswer, label: string): "answered" | "refused" | "invalid" | "limited" {
  const { status, body } = answer;
  expect(isObject(body), `${label}: JSON object body (${status}: ${String(body).slice(0, 200)})`).toBe(true);
  const json = body as { data: { error?: unknown }; errors: unknown[]; _rateLimit: unknown };
  if (status === 200) {
    expect(isObject(json.data), label).toBe(true);
    expect(extrasOnly(json, ["data"]), label).toBe(true);
    if (json.data.error === undefined) return "answered";
    expect(json.data.error).toEqual(
      expect.objectContaining({ statusCode: expect.any(Number), message: expect.any(String) }),
    );
    return "refused";
  }
  if (status === 400) {
    expect(json, label).toEqual(
      expect.objectContaining({
        code: "InputValidationError",
        message: expect.any(String),
        input: expect.any(Object),
        errors: expect.arrayContaining([
          expect.objectContaining({ propertyPath: expect.any(String), message: expect.any(String) }),
        ]),
      }),
    );
    expect(json.errors.length, label).toBeGreaterThan(0);
    return "invalid";
  }
  const logged = mesh.logger.entries.filter((e) => e.level === "error").at(-1);
  expect(
    status,
    `${label}: ${JSON.stringify(json).slice(0, 300)} ${String((logged?.error as Error | undefined)?.stack ?? "").slice(0, 600)}`,
  ).toBe(403);
  expect(json.errors).toEqual([{ message: expect.any(String), code: "RATE_LIMITED" }]);
  expect(isObject(json._rateLimit)).toBe(true);
  return "limited";
}

/** Row counts of every table of every schema; the rate-limit tables apart, as requests that got in are counted there by design. */
async function snapshot(includeRateTables: boolean): Promise<Record<string, number>> {
  const tables = await database.query<{ schema: string; name: string }>(
    `select table_schema as schema, table_name as name from information_schema.tables
     where table_type = 'BASE TABLE' and table_schema not in ('pg_catalog', 'information_schema') and table_name <> 'mikro_orm_migrations'`,
  );
  const out: Record<string, number> = {};
  for (const { schema, name } of tables.rows) {
    if (!includeRateTables && ["rate_counters", "rate_leases"].includes(name)) continue;
    const { rows } = await database.query<{ n: string }>(
      `select count(*) as n from ${database.escapeIdentifier(schema)}.${database.escapeIdentifier(name)}`,
    );
    out[`${schema}.${name}`] = Number(rows[0]!.n);
  }
  return out;
}

const target = (route: Route, query = "") => `/v1${route.path}${query}`;

/** A value of one of the route's declared properties, or something else entirely. */
const hostileValue = fc.oneof(
  fc.jsonValue({ maxDepth: 3 }),
  fc.string({ unit: "binary", maxLength: 40 }),
  fc.constantFrom(
    "",
    "\u0000",
    "\ud800",
    "x".repeat(9000),
    "req_zzz",
    "00000000-0000-0000-0000-000000000000",
    -1,
    1e308,
    true,
    null,
    [],
    {},
  ),
);

function bodyFor(route: Route): fc.Arbitrary<Buffer> {
  const names = [...Object.keys(route.input.properties ?? {}), "scope", "enroll", "__proto__", "constructor"];
  const fields = fc
    .dictionary(fc.constantFrom(...names), hostileValue, { maxKeys: 6 })
    .map((object) => Buffer.from(JSON.stringify(object)));
  return fc.oneof(
    fields,
    fc.jsonValue({ maxDepth: 4 }).map((value) => Buffer.from(JSON.stringify(value) ?? "")),
    fc.string({ unit: "binary", maxLength: 200 }).map((text) => Buffer.from(text)),
    fc.uint8Array({ maxLength: 200 }).map((bytes) => Buffer.from(bytes)),
    fc.constantFrom(
      Buffer.from('{"token": "\\ud800"}'),
      Buffer.from('{"a": "\\u0000", "metadata": {"\\u0000": 1}}'),
      Buffer.from("[".repeat(50_000)),
      Buffer.from(`{"x":${"[".repeat(5000)}${"]".repeat(5000)}}`),
      Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]),
      Buffer.alloc(70 * 1024, 0x20),
    ),
  );
}

function queryFor(route: Route): fc.Arbitrary<string> {
  const names = [...Object.keys(route.input.properties ?? {}), "scope", "__proto__", "status"];
  const pair = fc.tuple(
    fc.constantFrom(...names),
    fc.oneof(
      fc.string({ unit: "binary", maxLength: 30 }).map(encodeURIComponent),
      fc.constantFrom("%FF", "%C3%28", "%zz", "%00", "%", "a+b", ""),
    ),
  );
  return fc
    .array(pair, { maxLength: 5 })
    .map((pairs) => (pairs.length === 0 ? "" : `?${pairs.map(([k, v]) => `${encodeURIComponent(k)}=${v}`).join("&")}`));
}

const contentType = fc.constantFrom<[string, string][]>(
  [["Content-Type", "application/json"]],
  [["Content-Type", "application/json; charset=utf-8"]],
  [["Content-Type", "text/plain"]],
  [["Content-Type", "application/problem+json"]],
  [],
);

const authorization = fc.oneof(
  fc.constant<[string, string][]>([]),
  fc.constantFrom<[string, string][]>(
    [["Authorization", "Bearer"]],
    [["Authorization", "Basic c3ZjOmtleQ=="]],
    [["Authorization", `Bearer svc_dev_${"A".repeat(32)}`]],
    [["Authorization", `Bearer svcs_${"x".repeat(40)}`]],
    [["Authorization", `Bearer pk_live_${"B".repeat(32)}`]],
    [["Authorization", `Bearer ${"z".repeat(8000)}`]],
    [
      ["Authorization", "Bearer a"],
      ["Authorization", "Bearer b"],
    ],
    [
      ["Content-Type", "application/json"],
      ["Content-Type", "text/plain"],
    ],
    [
      ["X-Svc-Include-Ratelimit", "true"],
      ["X-Svc-Include-Ratelimit", "true"],
    ],
    [["Origin", "null"]],
  ),
  fc
    .string({ unit: "binary-ascii", maxLength: 60 })
    .map((value): [string, string][] => [["Authorization", `Bearer ${value.replace(/[\r\n]/g, "")}`]]),
);

describe.each(routes.map((route) => [`${route.method} ${route.path}`, route] as const))("%s", (_label, route) => {
  test("random and hostile input without a valid credential: a spec shape, and nothing changes", async () => {
    // Without a valid credential nothing may be counted either, except where no credential is asked for.
    const countsNothing = route.auth.accepts.length > 0;
    // The gateway gives an in_flight slot back as the answer leaves, not before it: the last request of the test
    // before may still be giving its slot back.
    await vi.waitFor(async () => {
      const { rows } = await database.query<{ n: string }>("select count(*) as n from gateway.rate_leases");
      expect(Number(rows[0]!.n)).toBe(0);
    });
    const before = await snapshot(countsNothing);
    await fc.assert(
      fc.asyncProperty(
        route.method === "POST" ? bodyFor(route) : queryFor(route),
        contentType,
        authorization,
        async (input, typeHeaders, authHeaders) => {
          const request =
            route.method === "POST"
              ? httpRequest("POST", target(route), [...typeHeaders, ...authHeaders], input as Buffer)
              : httpRequest(route.method, target(route, input as string), authHeaders);
          const kind = assertSpecShape(await send(request), `${route.operationId}`);
          if (route.auth.accepts.length > 0)
            expect(kind === "refused" || kind === "invalid", "no credential was valid: refused").toBe(true);
        },
      ),
      { numRuns: 40 },
    );
    expect(await snapshot(countsNothing)).toEqual(before);
  });

  if (!route.auth.accepts.includes("secret_key")) return;
  test("random input with a valid key: a spec shape; invalid input creates nothing", async () => {
    const before = await snapshot(false);
    await fc.assert(
      fc.asyncProperty(route.method === "POST" ? bodyFor(route) : queryFor(route), async (input) => {
        const headers: [string, string][] = [
          ["Authorization", `Bearer ${developmentKey}`],
          ["Content-Type", "application/json"],
        ];
        const request =
          route.method === "POST"
            ? httpRequest("POST", target(route), headers, input as Buffer)
            : httpRequest(route.method, target(route, input as string), headers);
        assertSpecShape(await send(request), route.operationId);
      }),
      { numRuns: 40 },
    );
    // The business services are not running here, so nothing valid can have been created either.
    expect(await snapshot(false)).toEqual(before);
  });
});

describe("hostile requests the HTTP parser itself refuses", () => {
  test("headers beyond Node's limit are a 431 in the InputValidationError shape", async () => {
    const answer = await send(
      httpRequest(
        "POST",
        "/v1/sdk/verify-token",
        [["Authorization", `Bearer ${"a".repeat(20_000)}`]],
        Buffer.from("{}"),
      ),
    );
    expect(answer.status).toBe(431);
    expect(answer.body).toMatchObject({
      code: "InputValidationError",
      input: {},
      errors: [{ propertyPath: "", invalidValue: null }],
    });
  });

  test.each([
    [
      "a control character in a header",
      Buffer.from(
        "POST /v1/sdk/verify-token HTTP/1.1\r\nHost: x\r\nX-Evil: a\u0001b\r\nContent-Length: 2\r\n\r\n{}",
        "latin1",
      ),
    ],
    [
      "a header line without a colon",
      Buffer.from("GET /v1/sdk/partner-config HTTP/1.1\r\nHost: x\r\nnonsense\r\n\r\n", "latin1"),
    ],
    [
      "two different Content-Length headers",
      Buffer.from(
        "POST /v1/sdk/verify-token HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}",
        "latin1",
      ),
    ],
    [
      "a request target that is not a URL",
      Buffer.from("GET http://[ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", "latin1"),
    ],
  ])("%s is a 400 in the InputValidationError shape", async (_label, request) => {
    const answer = await send(request);
    expect(answer.status).toBe(400);
    expect(answer.body).toMatchObject({
      code: "InputValidationError",
      input: {},
      errors: [{ propertyPath: "", invalidValue: null }],
    });
  });

  test("two Authorization headers are refused, not guessed at", async () => {
    const answer = await send(
      httpRequest(
        "POST",
        "/v1/sdk/verify-token",
        [
          ["Authorization", "Bearer a"],
          ["Authorization", "Bearer b"],
          ["Content-Type", "application/json"],
        ],
        Buffer.from("{}"),
      ),
    );
    expect(answer).toEqual({
      status: 400,
      body: {
        code: "InputValidationError",
        message: "Input validation failed: the authorization header must be sent once",
        input: {},
        errors: [{ propertyPath: "", invalidValue: null, message: "the authorization header must be sent once" }],
      },
    });
  });

  test("a query with invalid UTF-8 or a broken escape is a 400, not a guessed value", async () => {
    for (const query of ["?gate=%FF", "?gate=%C3%28", "?gate=%zz"]) {
      const answer = await send(httpRequest("GET", `/v1/sdk/partner-config${query}`, []));
      expect(answer.status, query).toBe(400);
      expect(errorMessages(answer.body)[0]).toBe("the query string is not valid percent-encoded UTF-8");
    }
  });

  test("NUL and unpaired surrogates in a string are invalid input", async () => {
    const answer = await send(
      httpRequest(
        "POST",
        "/v1/sdk/verify-token",
        [["Content-Type", "application/json"]],
        Buffer.from('{"token": "a\\u0000b", "audience": "\\udc00"}'),
      ),
    );
    expect(answer.status).toBe(400);
    expect(errorMessages(answer.body)).toEqual([
      "token must not contain NUL characters or unpaired surrogates",
      "audience must not contain NUL characters or unpaired surrogates",
    ]);
  });
});
