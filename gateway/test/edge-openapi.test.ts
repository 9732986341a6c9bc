import { ManualClock } from "@svc/platform";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { expectDocumented } from "../../test/harness/documented-answer.ts";
import { jsonSchemaOf } from "../src/http/openapi/json-schema.ts";
import { type Schema, validate } from "../src/http/schema.ts";
import { openApiDocumentOf, routes } from "../src/operations/index.ts";
import { aliasTable } from "../src/rename-window/aliases.ts";
import { startTestMesh, type TestMesh } from "./support.ts";

/**
 * The OpenAPI document is generated from the route table and the validation schemas: every route is
 * in it, every documented path is served, and what it says about inputs is what validation does.
 */

// biome-ignore lint/suspicious/noExplicitAny: the generated document is walked by path in every assertion; a typed OpenAPI model would outweigh the test.
type Json = Record<string, any>;
const publicOrigin = "https://api.svc.test";
const document = openApiDocumentOf(publicOrigin) as Json;

/** Every `$ref` in the document, so each can be checked to resolve. */
function refs(value: unknown, found: string[] = []): string[] {
  if (Array.isArray(value)) for (const v of value) refs(v, found);
  else if (typeof value === "object" && value !== null) {
    for (const [key, v] of Object.entries(value)) {
      if (key === "$ref" && typeof v === "string") found.push(v);
      else refs(v, found);
    }
  }
  return found;
}

describe("the document", () => {
  test("is OpenAPI 3.1 with the spec's version, and has every route under its path, method and operationId", () => {
    expect(document).toMatchObject({
      openapi: "3.1.0",
      info: { version: "2.0.0" },
      servers: [{ url: `${publicOrigin}/v1` }],
    });
    for (const route of routes) {
      const operation = document.paths[route.path]?.[route.method.toLowerCase()];
      expect(operation, `${route.method} ${route.path}`).toBeDefined();
      expect(operation.operationId).toBe(route.operationId);
      expect(operation.summary).toBe(route.summary);
      expect(operation.security).toHaveLength(route.auth.accepts.length);
      for (const requirement of operation.security)
        expect(document.components.securitySchemes[Object.keys(requirement)[0]!]).toMatchObject({
          type: "http",
          scheme: "bearer",
        });
      expect(Object.keys(operation.responses).sort()).toEqual(["200", "400", "403", "500"]);
    }
    const operationIds = Object.values(document.paths as Record<string, Json>).flatMap((item) =>
      Object.values(item)
        .filter((o) => o?.operationId)
        .map((o) => o.operationId),
    );
    expect(new Set(operationIds).size).toBe(operationIds.length);
  });

  test("every operation's answer is a result or a data.error, never both (each result has fields a refusal lacks)", () => {
    const refusal = { data: { error: { statusCode: 401, message: "an API key is required" } } };
    for (const route of routes) {
      // An independent validator: a oneOf matched by both branches would fail here.
      expectDocumented(document, route.method, `/v1${route.path}`, { status: 200, body: refusal });
    }
    expect(() =>
      expectDocumented(document, "GET", "/v1/verification/status", { status: 200, body: { data: {} } }),
    ).toThrow(/required property/);
  });

  test("every $ref resolves", () => {
    for (const reference of refs(document)) {
      const target = reference
        .slice(2)
        .split("/")
        .reduce<Json | undefined>((node, part) => node?.[part], document);
      expect(target, reference).toBeDefined();
    }
  });

  test("every POST takes the Idempotency-Key header, and its 409 codes are described; no GET takes it", () => {
    for (const item of Object.values(document.paths) as Json[]) {
      if (item.post?.operationId === undefined || item.post.requestBody === undefined) continue;
      // MCP's JSON-RPC endpoint is not an operation: a tool call runs one, whose request_id is its idempotency.
      if (item.post.operationId === "mcp") continue;
      expect(item.post.parameters, item.post.operationId).toContainEqual({
        $ref: "#/components/parameters/IdempotencyKey",
      });
    }
    for (const item of Object.values(document.paths) as Json[])
      expect(JSON.stringify(item.get?.parameters ?? [])).not.toContain("IdempotencyKey");
    expect(document.components.parameters.IdempotencyKey).toMatchObject({
      name: "Idempotency-Key",
      in: "header",
      required: false,
      schema: { type: "string", minLength: 1, maxLength: 255 },
    });
    const envelopeError = document.components.schemas.EnvelopeError.description;
    expect(envelopeError).toContain("idempotency_key_reused");
    expect(envelopeError).toContain("idempotency_key_in_use");
  });

  test("describes the envelope, the rate-limit body and headers, and the validation error", () => {
    const verify = document.paths["/sdk/verify-token"].post;
    const ok = verify.responses["200"];
    expect(Object.keys(ok.headers)).toEqual(["RateLimit-Policy", "RateLimit", "Idempotent-Replayed"]);
    expect(ok.content["application/json"].schema.properties.data.oneOf[0]).toMatchObject({
      required: ["data"],
      properties: { data: { type: "object" } },
    });
    expect(ok.content["application/json"].schema.properties.data.oneOf[1]).toEqual({
      type: "object",
      required: ["error"],
      properties: { error: { $ref: "#/components/schemas/EnvelopeError" } },
    });
    expect(document.components.schemas.RateLimited.required).toEqual(["errors", "_rateLimit"]);
    expect(document.components.schemas.InputValidationError.properties.errors.items.required).toEqual([
      "propertyPath",
      "invalidValue",
      "message",
    ]);
    expect(document.paths["/.well-known/jwks.json"].servers).toEqual([{ url: publicOrigin }]);
  });

  test("old names are documented as deprecated, and a required field may come under either name", () => {
    const link = document.paths["/sdk/create-verification-link"]?.post;
    if (link) {
      const schema = link.requestBody.content["application/json"].schema;
      expect(schema.properties.scope).toMatchObject({ type: "string", deprecated: true });
      expect(schema.properties.enroll).toMatchObject({ type: "boolean", deprecated: true });
      expect(schema.anyOf).toEqual([{ required: ["gate"] }, { required: ["scope"] }]);
      expect(link.responses["200"].headers).toHaveProperty("Deprecation");
    }
    const config = document.paths["/sdk/partner-config"]?.get;
    if (config)
      expect(config.parameters.find((p: Json) => p.name === "scope")).toMatchObject({
        in: "query",
        deprecated: true,
        required: false,
      });
    expect(Boolean(link) || Boolean(config)).toBe(
      aliasTable.some((row) => routes.some((r) => r.operationId === row.operationId)),
    );
  });

  test("describes gate_required on exactly the operations that refuse a missing gate key", () => {
    const described = routes
      .filter((route) =>
        document.paths[route.path][route.method.toLowerCase()].responses["200"].description.includes(
          'code: "gate_required"',
        ),
      )
      .map((route) => route.operationId)
      .sort();
    expect(described).toEqual(["createVerificationLink", "getPartnerConfig", "revokeVerification"]);
  });

  test("describes CORS: a preflight for every path that takes a site key or a grant token, and the headers a page may read", () => {
    const browserPaths = new Set<string>(
      routes
        .filter((route) => route.auth.accepts.some((kind) => kind === "site_key" || kind === "grant_token"))
        .map((route) => route.path),
    );
    expect(browserPaths.has("/sdk/create-verification-link")).toBe(true);
    expect(browserPaths.size).toBeGreaterThan(0);
    for (const [path, item] of Object.entries(document.paths as Record<string, Json>)) {
      expect(Boolean(item.options), path).toBe(browserPaths.has(path));
      if (!item.options) continue;
      expect(item.options.security).toEqual([]);
      expect(item.options.responses["204"].headers["Access-Control-Allow-Headers"].schema.const).toBe(
        "Authorization, Content-Type, x-svc-include-ratelimit, Idempotency-Key",
      );
      for (const method of ["get", "post"].filter((m) => item[m])) {
        expect(item[method].responses["200"].headers, `${method} ${path}`).toMatchObject({
          "Access-Control-Allow-Origin": expect.any(Object),
          "Access-Control-Expose-Headers": expect.any(Object),
        });
      }
    }
    expect(document.components.headers.AccessControlExposeHeaders.schema.const).toBe(
      "RateLimit, RateLimit-Policy, Deprecation, Sunset, Link, Idempotent-Replayed",
    );
    expect(document.paths["/sdk/logout"].post.responses["200"].headers).not.toHaveProperty(
      "Access-Control-Allow-Origin",
    );
  });

  test("describes qr_code_url: an SVG image that is never cached", () => {
    const qr = document.paths["/qr/{request_id}.svg"].get;
    expect(qr.parameters.map((p: Json) => [p.name, p.in, p.required])).toEqual([
      ["request_id", "path", true],
      ["t", "query", true],
    ]);
    expect(Object.keys(qr.responses["200"].content)).toEqual(["image/svg+xml"]);
    expect(qr.responses["200"].headers["Cache-Control"].schema.const).toBe("no-store");
    expect(
      document.paths["/sdk/create-verification-link"].post.responses["200"].content["application/json"].schema
        .properties.data.oneOf[0].properties.data.properties.qr_code_url.description,
    ).toMatch(/SVG/);
  });

  test("a schema converts to JSON Schema 2020-12: null unions, uuid-v4 as a uuid with its pattern", () => {
    const schema: Schema = {
      type: "object",
      properties: {
        id: { type: "string", format: "uuid-v4" },
        note: { type: "string", nullable: true, enum: ["a"] },
        free: { type: "object", additionalProperties: true },
      },
      required: ["id"],
    };
    const converted = jsonSchemaOf(schema) as Json;
    expect(converted).toEqual({
      type: "object",
      properties: {
        id: {
          type: "string",
          format: "uuid",
          pattern: "^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$",
        },
        note: { type: ["string", "null"], enum: ["a", null] },
        free: { type: "object", additionalProperties: true },
      },
      required: ["id"],
    });
    // The pattern is the one validation applies (case-insensitively there, so test lower case).
    const pattern = new RegExp(converted.properties.id.pattern);
    for (const id of ["0b6f7a52-3a3c-4c1e-9d7e-2f1f5b0c9a11", "0b6f7a52-3a3c-1c1e-9d7e-2f1f5b0c9a11"]) {
      expect(pattern.test(id)).toBe(validate(schema, { id }).ok);
    }
  });
});

describe("served", () => {
  const clock = new ManualClock("2026-12-01T10:00:00Z");
  let mesh: TestMesh;
  beforeAll(async () => {
    mesh = await startTestMesh("edge_openapi", clock);
  });
  afterAll(() => mesh?.stop());

  test("at {base_url}/openapi.json, generated from the routes the gateway serves", async () => {
    const response = await fetch(`${mesh.gateway.url}/v1/openapi.json`);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toMatch(/^application\/json/);
    const served = await response.json();
    expect(served).toEqual(openApiDocumentOf(mesh.env.GATEWAY_PUBLIC_ORIGIN!));
    expect((await fetch(`${mesh.gateway.url}/v1/openapi.json`, { method: "POST" })).status).toBe(405);
  });

  test("an answer matches the result schema the document declares", async () => {
    const route = routes.find((r) => r.operationId === "verifyToken")!;
    const response = await fetch(`${mesh.gateway.url}/v1${route.path}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ token: "a.b.c" }),
    });
    const answer = (await response.json()).data.data;
    expect(answer).toMatchObject({ valid: false, reason: "malformed" });
    expect(validate(route.output!, answer)).toEqual({ ok: true, value: answer });
  });

  test("every documented path and method exists", async () => {
    for (const [path, item] of Object.entries(document.paths as Record<string, Json>)) {
      const base = item.servers ? mesh.gateway.url : `${mesh.gateway.url}/v1`;
      for (const method of Object.keys(item).filter((key) => ["get", "post", "options"].includes(key))) {
        // Path parameters and required query parameters take their documented examples.
        const parameters: Json[] = item[method].parameters ?? [];
        const target = new URL(
          `${base}${parameters.filter((p) => p.in === "path").reduce((filled, p) => filled.replace(`{${p.name}}`, p.example), path)}`,
        );
        for (const p of parameters.filter((p) => p.in === "query" && p.required && p.example !== undefined))
          target.searchParams.set(p.name, p.example);
        const response = await fetch(target, {
          method: method.toUpperCase(),
          ...(method === "post" && { headers: { "content-type": "application/json" }, body: "{}" }),
          ...(method === "options" && {
            headers: { origin: "https://shop.example", "access-control-request-method": "POST" },
          }),
        });
        // The router's own answers; a 404 of the path's own (a widget version this server does not have) is the path's.
        expect(response.status, `${method} ${path}`).not.toBe(405);
        expect(await response.text(), `${method} ${path}`).not.toMatch(/"no such (operation|path): /);
        if (method === "options") expect(response.status).toBe(204);
      }
    }
  });
});
