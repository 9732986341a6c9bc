import { connect } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type DocumentedAnswer, expectDocumented } from "../harness/documented-answer.ts";
import { startTestMesh, type TestMesh } from "../harness/test-mesh.ts";
import { newGate, newPartner, partnerApi, result } from "./gate-support.ts";

/**
 * Real answers of the gateway against the document it serves, judged by an independent validator
 * (ajv, JSON Schema 2020-12): the status record and a `data.error` of GET /verification/status each
 * match exactly one branch of its `oneOf`; GET /openapi.json and the CORS preflights answer only what
 * the document lists, a request the server cannot read included.
 */

type Json = Record<string, unknown>;

describe("answers as the served document describes them", () => {
  let mesh: TestMesh;
  let document: Json;
  let partner: Awaited<ReturnType<typeof newPartner>>;

  beforeAll(async () => {
    mesh = await startTestMesh("openapi_answers", { only: ["signing", "account", "gate"] });
    partner = await newPartner(mesh, "Shop");
    await newGate(mesh, partner.organizationId, { key: "checkout" });
    document = (await (await fetch(`${mesh.gatewayUrl}/v1/openapi.json`)).json()) as Json;
  });
  afterAll(() => mesh?.stop());

  /** One exchange through fetch, as the validator takes it. */
  const exchange = async (path: string, init: RequestInit = {}): Promise<DocumentedAnswer> => {
    const response = await fetch(`${mesh.gatewayUrl}${path}`, init);
    const contentType = response.headers.get("content-type") ?? "";
    const text = await response.text();
    return {
      status: response.status,
      body: contentType.startsWith("application/json") ? JSON.parse(text) : text,
      contentType,
      headers: response.headers,
    };
  };

  /** One request written on a socket as is, for what fetch would not send (no Host, a bad Expect). */
  const rawExchange = (request: string): Promise<DocumentedAnswer> =>
    new Promise((resolve, reject) => {
      const socket = connect(Number(new URL(mesh.gatewayUrl).port), "127.0.0.1");
      const chunks: Buffer[] = [];
      socket.on("data", (chunk) => chunks.push(chunk));
      socket.on("error", reject);
      socket.on("close", () => {
        const text = Buffer.concat(chunks).toString("utf8");
        const split = text.indexOf("\r\n\r\n");
        const [statusLine = "", ...lines] = text.slice(0, split).split("\r\n");
        const headers = Object.fromEntries(
          lines.map((line) => [line.slice(0, line.indexOf(":")), line.slice(line.indexOf(":") + 1).trim()]),
        );
        resolve({
          status: Number(statusLine.split(" ")[1]),
          body: JSON.parse(text.slice(split + 4)),
          contentType: headers["content-type"],
          headers,
        });
      });
      socket.write(request);
    });

  const statusPath = (requestId: string) => `/v1/verification/status?request_id=${requestId}`;
  const withKey = (key: string) => ({ headers: { authorization: `Bearer ${key}` } });

  it("getVerificationStatus: a status record and a data.error answer each match exactly one branch", async () => {
    const api = partnerApi(mesh);
    const grant = result(await api.post("/sdk/create-session", { partner_user_id: "u-1" }, partner.devSecret))
      .anchor_grant_token as string;
    const created = result(
      await api.post("/sdk/create-verification-link", { gate: "checkout", partner_user_ref: "u-1" }, grant),
    );

    const pending = await exchange(statusPath(created.request_id), withKey(partner.devSecret));
    expect(pending.body).toMatchObject({ data: { found: true, status: "pending" } });
    expectDocumented(document, "GET", statusPath(created.request_id), pending);

    const unknown = await exchange(statusPath("req_0123456789abcdef0123456789abcdef"), withKey(partner.devSecret));
    expect(unknown.body).toMatchObject({ data: { found: false, status: "not_found" } });
    expectDocumented(document, "GET", statusPath("req_0123456789abcdef0123456789abcdef"), unknown);

    for (const refused of [
      await exchange(statusPath(created.request_id)),
      await exchange(statusPath(created.request_id), withKey("svc_dev_unknown")),
    ]) {
      expect(refused.status).toBe(200);
      expect(refused.body).toEqual({ data: { error: { statusCode: 401, message: expect.any(String) } } });
      expectDocumented(document, "GET", statusPath(created.request_id), refused);
    }

    // The two shapes are told apart: each fails the other's branch, so a mix of them fails both.
    const record = (pending.body as { data: Json }).data;
    expect(() =>
      expectDocumented(document, "GET", statusPath(created.request_id), {
        ...pending,
        body: { data: { ...record, error: { statusCode: 401, message: "no" } } },
      }),
    ).toThrow(/exactly one schema in oneOf/);
  });

  it("GET /openapi.json: the document, and a request the server cannot read", async () => {
    expectDocumented(document, "GET", "/v1/openapi.json", await exchange("/v1/openapi.json"));
    const refusals = [
      [400, "GET /v1/openapi.json HTTP/1.1\r\nConnection: close\r\n\r\n"],
      [417, "GET /v1/openapi.json HTTP/1.1\r\nHost: gateway.test\r\nExpect: 200-ok\r\nConnection: close\r\n\r\n"],
      [431, `GET /v1/openapi.json HTTP/1.1\r\nHost: gateway.test\r\nX-Big: ${"b".repeat(20_000)}\r\n\r\n`],
    ] as const;
    for (const [status, request] of refusals) {
      const answer = await rawExchange(request);
      expect(answer.status).toBe(status);
      expectDocumented(document, "GET", "/v1/openapi.json", answer);
    }
  });

  it("a preflight: any origin and any method get the path's 204, no origin gets Allow alone, and an unreadable one is a 400", async () => {
    const preflight = (headers: Record<string, string>) =>
      exchange("/v1/verification/status", { method: "OPTIONS", headers });
    const allowed = await preflight({ origin: "https://shop.example", "access-control-request-method": "GET" });
    const unknownOrigin = await preflight({
      origin: "https://elsewhere.example",
      "access-control-request-method": "GET",
    });
    const unknownMethod = await preflight({
      origin: "https://shop.example",
      "access-control-request-method": "DELETE",
    });
    for (const answer of [allowed, unknownOrigin, unknownMethod]) {
      expect(answer.status).toBe(204);
      expect(new Headers(answer.headers).get("access-control-allow-methods")).toBe("GET");
      expectDocumented(document, "OPTIONS", "/v1/verification/status", answer);
    }
    expect(new Headers(unknownOrigin.headers).get("access-control-allow-origin")).toBe("https://elsewhere.example");

    const withoutOrigin = await preflight({});
    expect(withoutOrigin.status).toBe(204);
    expect(new Headers(withoutOrigin.headers).get("allow")).toBe("GET, OPTIONS");
    expect(new Headers(withoutOrigin.headers).has("access-control-allow-origin")).toBe(false);
    expectDocumented(document, "OPTIONS", "/v1/verification/status", withoutOrigin);

    const unreadable = await rawExchange(
      "OPTIONS /v1/verification/status HTTP/1.1\r\nOrigin: https://shop.example\r\nConnection: close\r\n\r\n",
    );
    expect(unreadable.status).toBe(400);
    expectDocumented(document, "OPTIONS", "/v1/verification/status", unreadable);
  });

  it("the validator refuses what the document does not say", () => {
    expect(() => expectDocumented(document, "OPTIONS", "/v1/verification/status", { status: 404, body: "" })).toThrow(
      /does not document HTTP 404/,
    );
    expect(() =>
      expectDocumented(document, "OPTIONS", "/v1/verification/status", {
        status: 204,
        body: "",
        headers: { allow: "POST, OPTIONS" },
      }),
    ).toThrow(/header Allow/);
    expect(() =>
      expectDocumented(document, "GET", "/v1/verification/status", {
        status: 200,
        body: { data: { found: true, status: "approved", message: "" } },
      }),
    ).toThrow(/allowed values/);
  });
});
