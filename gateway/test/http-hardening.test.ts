import { connect } from "node:net";
import { ManualClock } from "@svc/platform";
import { Environment } from "@svc/proto/common/v1/caller_pb.js";
import { KeyType } from "@svc/proto/console/v1/console_pb.js";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { startTestMesh, type TestMesh } from "./support.ts";

/**
 * What every answer of the public port carries (decision "Caching headers"), what a 400 echoes (decision
 * "Bounded echo of bad input"), and Node's own HTTP parser refusals in the spec's 400 shape, over raw sockets.
 */

const clock = new ManualClock("2026-12-01T10:00:00Z");
let mesh: TestMesh;
let secretKey: string;

beforeAll(async () => {
  mesh = await startTestMesh("http_hardening", clock);
  const { organizationId } = await mesh.console.createOrganization({ name: "Hardening" });
  const created = await mesh.console.createKey({
    organizationId,
    environment: Environment.DEVELOPMENT,
    type: KeyType.SECRET,
  });
  secretKey = created.key;
  await mesh.console.setKeyLimits({ keyId: created.keyId, bucket: "per_minute", limit: 1 });
});
afterAll(() => mesh?.stop());

const api = (path: string, init?: RequestInit) => fetch(`${mesh.gateway.url}${path}`, init);
const postJson = (path: string, body: unknown, headers: Record<string, string> = {}) =>
  api(path, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });

const expectHardened = (response: Response, cacheControl = "no-store") => {
  expect(response.headers.get("cache-control"), response.url).toBe(cacheControl);
  expect(response.headers.get("x-content-type-options"), response.url).toBe("nosniff");
};

describe("Cache-Control: no-store and nosniff on every API answer", () => {
  test("an answer in the envelope", async () => {
    const response = await postJson("/v1/sdk/verify-token", { token: "not-a-token" });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ data: { data: expect.objectContaining({ valid: false }) } });
    expectHardened(response);
  });

  test("a 400, a 404, a 405, a preflight", async () => {
    const invalid = await postJson("/v1/sdk/verify-token", { token: 7 });
    expect(invalid.status).toBe(400);
    expectHardened(invalid);
    const missing = await api("/v1/no-such-operation");
    expect(missing.status).toBe(404);
    expectHardened(missing);
    const wrongMethod = await api("/v1/sdk/verify-token");
    expect(wrongMethod.status).toBe(405);
    expectHardened(wrongMethod);
    const preflight = await api("/v1/sdk/create-session", {
      method: "OPTIONS",
      headers: { origin: "https://shop.example", "access-control-request-method": "POST" },
    });
    expect(preflight.status).toBe(204);
    expectHardened(preflight);
  });

  test("a 403 RATE_LIMITED", async () => {
    const call = () => api("/v1/secured-accounts/list", { headers: { authorization: `Bearer ${secretKey}` } });
    await (await call()).body?.cancel();
    const limited = await call();
    expect(limited.status).toBe(403);
    expect(await limited.json()).toEqual(
      expect.objectContaining({ errors: [expect.objectContaining({ code: "RATE_LIMITED" })] }),
    );
    expectHardened(limited);
  });

  test("a 413 of a raw route, and a raw JSON route", async () => {
    const tooLarge = await api(`/wallet/responses/apr_${"0".repeat(32)}`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: "a".repeat(64 * 1024 + 1),
    });
    expect(tooLarge.status).toBe(413);
    expectHardened(tooLarge);
    const openApi = await api("/v1/openapi.json");
    expect(openApi.status).toBe(200);
    expect(openApi.headers.get("x-content-type-options")).toBe("nosniff");
  });

  test("the key set keeps its five minutes of cache, with nosniff", async () => {
    const response = await api("/.well-known/jwks.json");
    expect(response.status).toBe(200);
    expectHardened(response, "public, max-age=300");
  });
});

describe("the bounded echo through the gateway", () => {
  test("a 400 sends back a long string cut to 256 characters and ending in …", async () => {
    const response = await postJson("/v1/sdk/verify-token", { token: 7, audience: "a".repeat(60_000) });
    expect(response.status).toBe(400);
    const body = (await response.json()) as { input: unknown; errors: { invalidValue: unknown }[] };
    expect(body.input).toEqual({ token: 7, audience: `${"a".repeat(256)}…` });
    expect(body.errors).toContainEqual(expect.objectContaining({ invalidValue: `${"a".repeat(256)}…` }));
  });

  test("a 400 of input over 2 KiB after the cut echoes {} and says so", async () => {
    const wide = Object.fromEntries(Array.from({ length: 300 }, (_, i) => [`field_${i}`, "v".repeat(200)]));
    const response = await postJson("/v1/sdk/verify-token", { ...wide, token: 7 });
    expect(response.status).toBe(400);
    const body = (await response.json()) as { input: unknown; message: string };
    expect(body.input).toEqual({});
    expect(body.message).toMatch(/the input was too large to echo\)$/);
    expect(Number(response.headers.get("content-length"))).toBeLessThan(4096);
  });
});

/** Sends bytes as they are and reads the answer until the server closes the connection. */
function rawExchange(request: string): Promise<{ status: number; headers: string; body: unknown }> {
  return new Promise((resolve, reject) => {
    const socket = connect(mesh.gateway.port, "127.0.0.1");
    const chunks: Buffer[] = [];
    socket.on("data", (chunk) => chunks.push(chunk));
    socket.on("error", reject);
    socket.on("close", () => {
      const text = Buffer.concat(chunks).toString("utf8");
      const split = text.indexOf("\r\n\r\n");
      const head = text.slice(0, split);
      const rest = text.slice(split + 4);
      let body: unknown = rest;
      try {
        body = JSON.parse(rest);
      } catch {
        // left as text, which the assertions below then refuse
      }
      resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1]), headers: head.toLowerCase(), body });
    });
    socket.write(request);
  });
}

const specShape400 = (message: string) => ({
  code: "InputValidationError",
  message: `Input validation failed: ${message}`,
  input: {},
  errors: [{ propertyPath: "", invalidValue: null, message }],
});

describe("Node's own HTTP refusals in the spec's shape", () => {
  const expectHardenedHead = (headers: string) => {
    expect(headers).toContain("content-type: application/json");
    expect(headers).toContain("cache-control: no-store");
    expect(headers).toContain("x-content-type-options: nosniff");
  };

  test("an HTTP/1.1 request without Host is a 400", async () => {
    const answer = await rawExchange("GET /v1/openapi.json HTTP/1.1\r\nConnection: close\r\n\r\n");
    expect(answer.status).toBe(400);
    expect(answer.body).toEqual(specShape400("an HTTP/1.1 request must carry a Host header"));
    expectHardenedHead(answer.headers);
  });

  test("an Expect other than 100-continue is a 417", async () => {
    const answer = await rawExchange(
      "POST /v1/sdk/verify-token HTTP/1.1\r\nHost: gateway.test\r\nExpect: 200-ok\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}",
    );
    expect(answer.status).toBe(417);
    expect(answer.body).toEqual(specShape400('the expectation "200-ok" is not supported; only 100-continue is'));
    expectHardenedHead(answer.headers);
  });

  test("a malformed request line is a 400", async () => {
    const answer = await rawExchange("GET /v1/openapi.json HTTP/9.9 extra\r\nHost: gateway.test\r\n\r\n");
    expect(answer.status).toBe(400);
    expect(answer.body).toEqual(specShape400("the request is not valid HTTP/1.1"));
    expectHardenedHead(answer.headers);
  });

  test("headers over Node's limit are a 431", async () => {
    const answer = await rawExchange(
      `GET /v1/openapi.json HTTP/1.1\r\nHost: gateway.test\r\nX-Big: ${"b".repeat(20_000)}\r\n\r\n`,
    );
    expect(answer.status).toBe(431);
    expect(answer.body).toEqual(specShape400("request headers are too large"));
    expectHardenedHead(answer.headers);
  });

  test("Expect: 100-continue gets its 100, then the operation's answer", async () => {
    const answer = await rawExchange(
      'POST /v1/sdk/verify-token HTTP/1.1\r\nHost: gateway.test\r\nExpect: 100-continue\r\nContent-Type: application/json\r\nContent-Length: 9\r\nConnection: close\r\n\r\n{"token":',
    );
    expect(answer.status).toBe(100);
    expect(answer.body).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n[\s\S]*"code":"InputValidationError"/);
  });
});
