import { create } from "@bufbuild/protobuf";
import { createClient, createRouterTransport } from "@connectrpc/connect";
import { ManualClock } from "@svc/platform";
import { type Gate, GateConsoleService, GateSchema } from "@svc/proto/gate/v1/gate_pb.js";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { gateConsoleRenames } from "../src/console/gate-console-renames.ts";
import { parseStage } from "../src/http/parse.ts";
import { handleStage, validateStage } from "../src/http/pipeline.ts";
import { type RunningServer, startPublicServer } from "../src/http/public-server.ts";
import { ok } from "../src/http/route.ts";
import type { ObjectSchema } from "../src/http/schema.ts";
import { routes as productionRoutes } from "../src/operations/index.ts";
import { aliasRequest, aliasResult, aliasStage, renameIssues } from "../src/rename-window/alias-stage.ts";
import { type AliasRow, aliasTable, gateStatusRenames, sunset } from "../src/rename-window/aliases.ts";
import type { GatewayServices } from "../src/services.ts";
import { defineRoute } from "../src/services.ts";
import { memoryLogger } from "./memory-logger.ts";

/**
 * The rename window, row by row, before and after the sunset (read from the clock), over real HTTP
 * with routes that carry the production operationIds and echo what reached them.
 */

const duringWindow = "2026-12-01T10:00:00Z";
const afterSunset = "2027-01-15T00:00:00Z";
const link = "https://api.svc.test/v1/openapi.json";
const clock = new ManualClock(duringWindow);
/** What the last handler received: the input after the alias stage and validation. */
let received: unknown;

const gateSchema = { type: "string", minLength: 1, maxLength: 200 } as const;

const routes = [
  defineRoute({
    operationId: "createVerificationLink",
    method: "POST",
    path: "/sdk/create-verification-link",
    summary: "echo",
    auth: { accepts: [] },
    input: {
      type: "object",
      properties: { gate: gateSchema, notarize: { type: "boolean" }, mode: { type: "string" } },
      required: ["gate"],
    },
    envelope: "nested",
    handle: async (input) => {
      received = input;
      return ok({ request_id: "req_1", gate: input.gate });
    },
  }),
  defineRoute({
    operationId: "revokeVerification",
    method: "POST",
    path: "/sdk/revoke-verification",
    summary: "echo",
    auth: { accepts: [] },
    input: {
      type: "object",
      properties: { gate: gateSchema, partner_user_id: { type: "string" } },
      required: ["gate"],
    },
    envelope: "nested",
    handle: async (input) => {
      received = input;
      return ok({ success: true, revoked_count: 0, message: "nothing pending" });
    },
  }),
  defineRoute({
    operationId: "getPartnerConfig",
    method: "GET",
    path: "/sdk/partner-config",
    summary: "echo",
    auth: { accepts: [] },
    input: { type: "object", properties: { gate: gateSchema }, required: ["gate"] },
    envelope: "nested",
    handle: async (input) => {
      received = input;
      return ok({ gate: input.gate, status: input.gate === "drafty" ? "draft" : "active", gate_type: "human" });
    },
  }),
  defineRoute({
    operationId: "listGates",
    method: "GET",
    path: "/test/gates",
    summary: "a gate status filter",
    auth: { accepts: [] },
    input: {
      type: "object",
      properties: { status: { type: "array", items: { type: "string", enum: ["draft", "active", "archived"] } } },
    },
    envelope: "flat",
    handle: async (input) => {
      received = input;
      return ok({ rows: [] });
    },
  }),
];

const testTable: readonly AliasRow[] = [
  ...aliasTable,
  { operationId: "listGates", in: "query", old: "status", new: "status", values: gateStatusRenames },
];

let server: RunningServer;
beforeAll(async () => {
  server = await startPublicServer({
    host: "127.0.0.1",
    port: 0,
    routes,
    stages: [parseStage, aliasStage({ table: testTable, sunset, link }), validateStage, handleStage],
    services: {} as GatewayServices,
    clock,
    logger: memoryLogger(),
    ready: async () => {},
  });
});
afterAll(() => server?.stop());

const post = async (path: string, body: unknown) => {
  const response = await fetch(`${server.url}/v1${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: response.status, headers: response.headers, body: await response.json() };
};
const get = async (pathAndQuery: string) => {
  const response = await fetch(`${server.url}/v1${pathAndQuery}`);
  return { status: response.status, headers: response.headers, body: await response.json() };
};

const deprecation = (used: { old: string; new: string }[]) => ({ used, sunset: "2027-01-15T00:00:00Z", link });

describe("the alias table", () => {
  test("names operations of the production route table, in the right place, by fields their schemas declare", () => {
    for (const row of aliasTable) {
      const route = productionRoutes.find((r) => r.operationId === row.operationId);
      expect(route, `${row.operationId} is a production route`).toBeDefined();
      if (row.in === "result") {
        expect(
          Object.keys((route!.output as ObjectSchema | undefined)?.properties ?? {}),
          `${row.operationId} result declares ${row.new}`,
        ).toContain(row.new);
      } else {
        expect(route!.method).toBe(row.in === "query" ? "GET" : "POST");
        expect(Object.keys(route!.input.properties ?? {}), `${row.operationId} input declares ${row.new}`).toContain(
          row.new,
        );
        if (row.old !== row.new) expect(Object.keys(route!.input.properties ?? {})).not.toContain(row.old);
      }
    }
  });

  test("gate status values map old to new, and every new value has one old value to report", () => {
    expect(Object.fromEntries(gateStatusRenames.map((r) => [r.old, r.new]))).toEqual({
      pending: "draft",
      pending_revisions: "draft",
      approved: "active",
      denied: "archived",
      cancelled: "archived",
    });
    expect(
      aliasResult(
        [{ operationId: "x", in: "result", old: "status_legacy", new: "status", values: gateStatusRenames }],
        { status: "archived" },
        false,
      ),
    ).toEqual({
      status: "archived",
      status_legacy: "denied",
    });
  });
});

describe("the gate console through the rename window", () => {
  /** A stand-in for the gate service's console: it knows only the new names and records what it got. */
  const asked: string[] = [];
  const row = (status: string) => create(GateSchema, { key: status, status });
  const gateService = createClient(
    GateConsoleService,
    createRouterTransport((router) =>
      router.service(GateConsoleService, {
        createGate: (request) => {
          asked.push(request.status);
          return { gate: row(request.status) };
        },
        setGateStatus: (request) => {
          asked.push(request.status);
          return { gate: row(request.status) };
        },
        listGates: (request) => {
          asked.push(request.status);
          return { gates: ["draft", "active", "archived"].map(row) };
        },
        expireRequests: (request) => ({ expiredCount: request.limit }),
      }),
    ),
  );
  const consoleClock = new ManualClock(duringWindow);
  const gateConsole = createClient(
    GateConsoleService,
    createRouterTransport(gateConsoleRenames({ gate: gateService, clock: consoleClock })),
  );
  const legacyOf = (gates: Gate[]) => Object.fromEntries(gates.map((gate) => [gate.status, gate.statusLegacy]));

  test("old status names reach gate as new ones; new and unknown names pass unchanged", async () => {
    asked.length = 0;
    for (const old of ["pending", "pending_revisions", "approved", "denied", "cancelled", "active", "live"])
      await gateConsole.setGateStatus({ status: old });
    await gateConsole.createGate({ status: "approved" });
    await gateConsole.listGates({ status: "cancelled" });
    await gateConsole.listGates({});
    expect(asked).toEqual([
      "draft",
      "draft",
      "active",
      "archived",
      "archived",
      "active",
      "live",
      "active",
      "archived",
      "",
    ]);
    expect((await gateConsole.expireRequests({ limit: 7 })).expiredCount).toBe(7);
  });

  test("rows carry the old status name partner-config shows until the sunset (by the clock), none from then on", async () => {
    const partnerConfigLegacy = (status: string) =>
      (
        aliasResult(
          aliasTable.filter((r) => r.operationId === "getPartnerConfig" && r.in === "result"),
          { status },
          false,
        ) as { status_legacy?: string }
      ).status_legacy;
    consoleClock.set(duringWindow);
    const rows = legacyOf((await gateConsole.listGates({})).gates);
    expect(rows).toEqual({ draft: "pending", active: "approved", archived: "denied" });
    for (const status of ["draft", "active", "archived"]) expect(rows[status]).toBe(partnerConfigLegacy(status));
    expect((await gateConsole.setGateStatus({ status: "approved" })).gate?.statusLegacy).toBe("approved");
    expect((await gateConsole.createGate({ status: "draft" })).gate?.statusLegacy).toBe("pending");

    consoleClock.set(new Date(sunset.getTime() - 1));
    expect((await gateConsole.setGateStatus({ status: "archived" })).gate?.statusLegacy).toBe("denied");
    consoleClock.set(sunset);
    expect(legacyOf((await gateConsole.listGates({})).gates)).toEqual({ draft: "", active: "", archived: "" });
    expect((await gateConsole.createGate({ status: "active" })).gate?.statusLegacy).toBe("");
  });
});

describe("during the window", () => {
  test("createVerificationLink: scope → gate and enroll → notarize; the result carries scope; the signals name both", async () => {
    const answer = await post("/sdk/create-verification-link", { scope: "checkout", enroll: true });
    expect(received).toEqual({ gate: "checkout", notarize: true });
    expect(answer.body).toEqual({
      data: { data: { request_id: "req_1", gate: "checkout", scope: "checkout" } },
      _deprecation: deprecation([
        { old: "scope", new: "gate" },
        { old: "enroll", new: "notarize" },
      ]),
    });
    expect(answer.headers.get("deprecation")).toBe("true");
    expect(answer.headers.get("sunset")).toBe("Fri, 15 Jan 2027 00:00:00 GMT");
    expect(answer.headers.get("link")).toBe(`<${link}>; rel="deprecation"`);
  });

  test("createVerificationLink with new names only: both names out, no signals", async () => {
    const answer = await post("/sdk/create-verification-link", { gate: "checkout", notarize: false });
    expect(answer.body).toEqual({ data: { data: { request_id: "req_1", gate: "checkout", scope: "checkout" } } });
    expect(answer.headers.get("deprecation")).toBeNull();
    expect(answer.headers.get("sunset")).toBeNull();
    expect(answer.headers.get("link")).toBeNull();
  });

  test("the new name wins when both are sent, and only names sent alone count as used", async () => {
    const answer = await post("/sdk/create-verification-link", { scope: "old-gate", gate: "new-gate", enroll: true });
    expect(received).toEqual({ gate: "new-gate", notarize: true });
    expect(answer.body._deprecation).toEqual(deprecation([{ old: "enroll", new: "notarize" }]));
    const both = await post("/sdk/create-verification-link", { scope: "old-gate", gate: "new-gate" });
    expect(both.body._deprecation).toBeUndefined();
    expect(both.headers.get("deprecation")).toBeNull();
  });

  test("revokeVerification: scope → gate in the body", async () => {
    const answer = await post("/sdk/revoke-verification", { scope: "checkout", partner_user_id: "u1" });
    expect(received).toEqual({ gate: "checkout", partner_user_id: "u1" });
    expect(answer.body).toEqual({
      data: { data: { success: true, revoked_count: 0, message: "nothing pending" } },
      _deprecation: deprecation([{ old: "scope", new: "gate" }]),
    });
  });

  test("getPartnerConfig: scope → gate in the query; the result carries scope and status_legacy", async () => {
    const answer = await get("/sdk/partner-config?scope=drafty");
    expect(received).toEqual({ gate: "drafty" });
    expect(answer.body).toEqual({
      data: {
        data: { gate: "drafty", status: "draft", gate_type: "human", scope: "drafty", status_legacy: "pending" },
      },
      _deprecation: deprecation([{ old: "scope", new: "gate" }]),
    });
    expect((await get("/sdk/partner-config?gate=live")).body).toEqual({
      data: { data: { gate: "live", status: "active", gate_type: "human", scope: "live", status_legacy: "approved" } },
    });
  });

  test("a status filter reads old values as new ones", async () => {
    const answer = await get("/test/gates?status=approved&status=archived&status=pending_revisions");
    expect(received).toEqual({ status: ["active", "archived", "draft"] });
    expect(answer.body._deprecation.used).toEqual([
      { old: "status=approved", new: "status=active" },
      { old: "status=pending_revisions", new: "status=draft" },
    ]);
  });

  test("a validation error names the field as the request sent it and echoes the input as received", async () => {
    const answer = await post("/sdk/create-verification-link", { scope: "", enroll: "yes" });
    expect(answer.status).toBe(400);
    expect(answer.body).toEqual({
      code: "InputValidationError",
      message: "Input validation failed: scope must not be empty; enroll must be a boolean, not string",
      input: { scope: "", enroll: "yes" },
      errors: [
        { propertyPath: "scope", invalidValue: "", message: "scope must not be empty" },
        { propertyPath: "enroll", invalidValue: "yes", message: "enroll must be a boolean, not string" },
      ],
      _deprecation: deprecation([
        { old: "scope", new: "gate" },
        { old: "enroll", new: "notarize" },
      ]),
    });
    expect(answer.headers.get("deprecation")).toBe("true");
  });
});

describe("from the sunset on", () => {
  beforeAll(() => clock.set(afterSunset));

  test("an old name sent alone is refused with alias_retired, naming the replacement", async () => {
    const answer = await post("/sdk/create-verification-link", { scope: "checkout" });
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({
      data: {
        error: {
          statusCode: 400,
          code: "alias_retired",
          message: "old names are no longer accepted since 2027-01-15: scope was renamed gate: send gate",
        },
      },
    });
    expect(answer.headers.get("deprecation")).toBeNull();
    expect((await post("/sdk/create-verification-link", { gate: "checkout", enroll: true })).body.data.error).toEqual({
      statusCode: 400,
      code: "alias_retired",
      message: "old names are no longer accepted since 2027-01-15: enroll was renamed notarize: send notarize",
    });
    expect((await get("/sdk/partner-config?scope=live")).body.data.error.code).toBe("alias_retired");
    expect((await post("/sdk/revoke-verification", { scope: "live" })).body.data.error.code).toBe("alias_retired");
    expect((await get("/test/gates?status=approved")).body.data.error.message).toBe(
      "old names are no longer accepted since 2027-01-15: status value approved was renamed active: send active",
    );
  });

  test("old result fields disappear and no deprecation signal is sent", async () => {
    const answer = await post("/sdk/create-verification-link", { gate: "checkout" });
    expect(answer.body).toEqual({ data: { data: { request_id: "req_1", gate: "checkout" } } });
    expect(answer.headers.get("deprecation")).toBeNull();
    expect((await get("/sdk/partner-config?gate=drafty")).body).toEqual({
      data: { data: { gate: "drafty", status: "draft", gate_type: "human" } },
    });
  });

  test("an old name sent beside its new one is ignored like any unknown field", async () => {
    const answer = await post("/sdk/create-verification-link", { gate: "checkout", scope: "other" });
    expect(received).toEqual({ gate: "checkout" });
    expect(answer.body).toEqual({ data: { data: { request_id: "req_1", gate: "checkout" } } });
  });
});

describe("pure rules", () => {
  const rows = aliasTable.filter((row) => row.operationId === "createVerificationLink" && row.in === "body");

  test("a request without old names is left alone", () => {
    expect(aliasRequest(rows, { gate: "g", mode: "private" }, undefined)).toEqual({
      input: { gate: "g", mode: "private" },
      used: [],
      renamed: [],
    });
  });

  test("renameIssues maps nested paths of a renamed field too", () => {
    expect(
      renameIssues(
        [{ propertyPath: "notarize.x", invalidValue: 1, message: "notarize.x must be a string" }],
        [{ old: "enroll", new: "notarize" }],
      ),
    ).toEqual([{ propertyPath: "enroll.x", invalidValue: 1, message: "enroll.x must be a string" }]);
  });

  test("a result that is not an object passes unchanged", () => {
    expect(aliasResult(aliasTable, ["a"], false)).toEqual(["a"]);
  });
});
