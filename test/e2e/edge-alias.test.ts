import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { runSvcctl } from "../harness/svcctl.ts";
import { startTestMesh, type TestMesh } from "../harness/test-mesh.ts";
import { gateConsole, newGate, newPartner, partnerApi, result } from "./gate-support.ts";

/**
 * The rename window through the real mesh: the gate operations that have old names, with old and new
 * names, during the window and from the sunset on (the mesh's clock); and the operators' gate rows,
 * which carry the same old status name as partner-config until the sunset and none from then on.
 */

const duringWindow = "2026-12-01T10:00:00Z";
const afterSunset = "2027-01-15T00:00:01Z";
const deprecationLink = "http://127.0.0.1:8080/v1/openapi.json";

describe("the rename window end to end", () => {
  let mesh: TestMesh;
  let api: ReturnType<typeof partnerApi>;
  let partner: Awaited<ReturnType<typeof newPartner>>;

  beforeAll(async () => {
    mesh = await startTestMesh("edge_alias", { only: ["signing", "gate"], clockAt: duringWindow });
    api = partnerApi(mesh);
    partner = await newPartner(mesh, "Renames");
    await newGate(mesh, partner.organizationId, { key: "checkout", status: "active" });
  });
  afterAll(() => mesh?.stop());

  /** `svcctl gate list` of the partner's gates, by key. */
  const consoleRows = async () => {
    const { code, stdout } = await runSvcctl(mesh, ["gate", "list", "--org", partner.organizationId]);
    expect(code).toBe(0);
    const gates: { key: string; status: string; status_legacy?: string }[] = JSON.parse(stdout).gates;
    return Object.fromEntries(gates.map((row) => [row.key, row]));
  };
  const configOf = async (gate: string) => result(await api.get("/sdk/partner-config", { gate }, partner.devSecret));

  const grant = async () =>
    result(await api.post("/sdk/create-session", { partner_user_id: `user-${crypto.randomUUID()}` }, partner.devSecret))
      .anchor_grant_token as string;

  test("partner-config: scope in the query; the result carries scope and status_legacy; the request is told", async () => {
    const reply = await api.get("/sdk/partner-config", { scope: "checkout" }, partner.devSecret);
    expect(result(reply)).toMatchObject({
      gate: "checkout",
      scope: "checkout",
      status: "active",
      status_legacy: "approved",
    });
    expect(reply.body._deprecation).toEqual({
      used: [{ old: "scope", new: "gate" }],
      sunset: "2027-01-15T00:00:00Z",
      link: deprecationLink,
    });
    const current = await api.get("/sdk/partner-config", { gate: "checkout" }, partner.devSecret);
    expect(result(current)).toMatchObject({ gate: "checkout", scope: "checkout", status_legacy: "approved" });
    expect(current.body._deprecation).toBeUndefined();
  });

  test("create-verification-link: scope and enroll in the body; the result carries gate and scope", async () => {
    const reply = await api.post("/sdk/create-verification-link", { scope: "checkout", enroll: false }, await grant());
    expect(result(reply)).toMatchObject({
      gate: "checkout",
      scope: "checkout",
      request_id: expect.stringMatching(/^req_[0-9a-f]{32}$/),
    });
    expect(reply.body._deprecation.used).toEqual([
      { old: "scope", new: "gate" },
      { old: "enroll", new: "notarize" },
    ]);
  });

  test("revoke-verification: scope in the body", async () => {
    const reply = await api.post(
      "/sdk/revoke-verification",
      { scope: "checkout", partner_user_id: "nobody" },
      partner.devSecret,
    );
    expect(result(reply)).toMatchObject({ success: true, revoked_count: 0 });
    expect(reply.body._deprecation.used).toEqual([{ old: "scope", new: "gate" }]);
  });

  test("the console's rows carry the old status name partner-config shows, for every status", async () => {
    await newGate(mesh, partner.organizationId, { key: "drafted", status: "draft" });
    await newGate(mesh, partner.organizationId, { key: "retired", status: "archived" });
    const rows = await consoleRows();
    expect(
      Object.fromEntries(Object.entries(rows).map(([key, row]) => [key, [row.status, row.status_legacy]])),
    ).toEqual({
      checkout: ["active", "approved"],
      drafted: ["draft", "pending"],
      retired: ["archived", "denied"],
    });
    for (const key of ["checkout", "drafted", "retired"])
      expect((await configOf(key)).status_legacy, key).toBe(rows[key]!.status_legacy);
  });

  test("from the sunset on: an old name alone is refused with alias_retired, and results lose the old names", async () => {
    mesh.setClock(afterSunset);
    const refused = await api.get("/sdk/partner-config", { scope: "checkout" }, partner.devSecret);
    expect(refused.body).toEqual({
      data: {
        error: {
          statusCode: 400,
          code: "alias_retired",
          message: "old names are no longer accepted since 2027-01-15: scope was renamed gate: send gate",
        },
      },
      _rateLimit: expect.any(Object),
    });
    const config = result(await api.get("/sdk/partner-config", { gate: "checkout" }, partner.devSecret));
    expect(config).toMatchObject({ gate: "checkout", status: "active" });
    expect(config.scope).toBeUndefined();
    expect(config.status_legacy).toBeUndefined();
    const link = await api.post("/sdk/create-verification-link", { gate: "checkout" }, await grant());
    expect(result(link).scope).toBeUndefined();
    expect(link.body._deprecation).toBeUndefined();
    expect(
      (await api.post("/sdk/revoke-verification", { scope: "checkout", partner_user_id: "nobody" }, partner.devSecret))
        .body.data.error.code,
    ).toBe("alias_retired");
  });

  test("from the sunset on the console's rows carry no old status name, like partner-config", async () => {
    mesh.setClock(afterSunset);
    const rows = await consoleRows();
    expect(
      Object.values(rows)
        .map((row) => row.status)
        .sort(),
    ).toEqual(["active", "archived", "draft"]);
    expect(
      (await gateConsole(mesh).listGates({ organizationId: partner.organizationId })).gates.map(
        (gate) => gate.statusLegacy,
      ),
    ).toEqual(["", "", ""]);
    for (const [key, row] of Object.entries(rows)) {
      expect(row, key).not.toHaveProperty("status_legacy");
      expect(await configOf(key), key).not.toHaveProperty("status_legacy");
    }
  });
});
