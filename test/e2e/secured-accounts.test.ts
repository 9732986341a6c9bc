import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runSvcctl } from "../harness/svcctl.ts";
import { startTestMesh, type TestMesh } from "../harness/test-mesh.ts";
import { confirmedNotarizeRequest, dataError, newGate, newPartner, partnerApi, result } from "./gate-support.ts";

/**
 * `GET /secured-accounts/list` through the gateway, over accounts secured the real way: a sandbox
 * human confirms a notarize request on a gate that offers it, and the account service links it.
 */
const start = new Date(Date.now() + 60_000);

describe("secured accounts list end to end", () => {
  let mesh: TestMesh;
  let api: ReturnType<typeof partnerApi>;
  let partner: Awaited<ReturnType<typeof newPartner>>;
  let now = start;
  const handles: Record<string, string> = {};

  const list = (query: Record<string, unknown> = {}, key = partner.devSecret) =>
    api.get("/secured-accounts/list", query, key);

  /** A sandbox human confirms a notarize request for `reference`: the account is then secured. */
  async function secure(reference: string) {
    const { record } = await confirmedNotarizeRequest(mesh, partner, reference);
    expect(record).toMatchObject({ trusted: true, first_time: true });
    const [row] = result(await list({ platform_user_ref: reference })).rows;
    return row.handle as string;
  }

  beforeAll(async () => {
    mesh = await startTestMesh("secured_accounts", { only: ["signing", "account", "gate"], clockAt: start });
    api = partnerApi(mesh);
    partner = await newPartner(mesh, "Secured accounts");
    await newGate(mesh, partner.organizationId, { key: "login", notarizeOffer: true });
    handles.older = await secure("acct-older");
    now = new Date(now.getTime() + 60_000);
    mesh.setClock(now);
    handles.newer = await secure("acct-newer");
  });
  afterAll(async () => {
    await mesh?.stop();
  });

  it("lists the accounts a confirmation secured, newest first, with the spec's row and page fields", async () => {
    const page = result(await list());
    expect(page).toMatchObject({ total: 2, environment: "development", limit: 25, offset: 0 });
    expect(page.rows.map((row: { handle: string }) => row.handle)).toEqual([handles.newer, handles.older]);
    expect(page.rows[0]).toEqual({
      handle: expect.stringMatching(/^OP_[A-Za-z0-9]{12}$/),
      status: "active",
      secured_at: now.toISOString(),
      unlinked_at: null,
      unlinked_by: null,
      unlink_reason: null,
      surface_id: null,
    });
    expect(JSON.stringify(page)).not.toContain("acct-");

    const second = result(await list({ limit: 1, offset: 1 }));
    expect(second).toMatchObject({ total: 2, limit: 1, offset: 1 });
    expect(second.rows.map((row: { handle: string }) => row.handle)).toEqual([handles.older]);
  });

  it("filters by reference (exact) and by status", async () => {
    expect(
      result(await list({ platform_user_ref: "acct-older" })).rows.map((row: { handle: string }) => row.handle),
    ).toEqual([handles.older]);
    expect(result(await list({ platform_user_ref: "acct-olde" }))).toMatchObject({ rows: [], total: 0 });
    expect(result(await list({ status: "active" })).total).toBe(2);
    expect(result(await list({ status: "unlinked" }))).toMatchObject({ rows: [], total: 0 });
    expect(result(await list({ status: "active", platform_user_ref: "acct-newer" })).rows[0].handle).toBe(
      handles.newer,
    );
  });

  it("shows a key only its own environment and organization", async () => {
    expect(result(await list({}, partner.prodSecret))).toMatchObject({ rows: [], total: 0, environment: "production" });
    expect(result(await list({ platform_user_ref: "acct-older" }, partner.prodSecret))).toMatchObject({
      rows: [],
      total: 0,
    });
    const other = await newPartner(mesh, "Another platform");
    expect(result(await list({ platform_user_ref: "acct-older" }, other.devSecret))).toMatchObject({
      rows: [],
      total: 0,
      environment: "development",
    });
  });

  it("takes a secret API key only, with the table's codes", async () => {
    expect(dataError(await api.get("/secured-accounts/list", {}))).toMatchObject({
      statusCode: 401,
      code: "api_key_required",
    });
    expect(
      dataError(await api.get("/secured-accounts/list", {}, partner.devSite, { origin: "https://shop.example" })),
    ).toMatchObject({ statusCode: 401, code: "api_key_required" });
    expect(dataError(await list({}, `svc_dev_${"A".repeat(32)}`))).toMatchObject({
      statusCode: 401,
      code: "invalid_api_key",
    });
    expect(dataError(await list({}, "not-a-key"))).toMatchObject({ statusCode: 401, code: "invalid_api_key" });
  });

  it("refuses bad filters as data.error with their code, bad paging as InputValidationError", async () => {
    expect(dataError(await list({ status: "pending" }))).toMatchObject({ statusCode: 400, code: "invalid_status" });
    expect(dataError(await list({ status: "" }))).toMatchObject({ statusCode: 400, code: "invalid_status" });
    expect(dataError(await list({ platform_user_ref: "x".repeat(513) }))).toMatchObject({
      statusCode: 400,
      code: "invalid_platform_user_ref",
    });
    expect(dataError(await list({ platform_user_ref: " " }))).toMatchObject({
      statusCode: 400,
      code: "invalid_platform_user_ref",
    });
    expect(result(await list({ platform_user_ref: "x".repeat(512) })).total).toBe(0);
    for (const query of [{ limit: 0 }, { limit: 101 }, { limit: "ten" }, { offset: -1 }, { offset: 1.5 }]) {
      const reply = await list(query);
      expect(reply.status, JSON.stringify(query)).toBe(400);
      expect(reply.body).toMatchObject({
        code: "InputValidationError",
        errors: [{ propertyPath: Object.keys(query)[0] }],
      });
    }
  });

  it("answers 500 secured_accounts_unavailable while the account service is down", async () => {
    await mesh.kill("account");
    try {
      expect(dataError(await list())).toMatchObject({ statusCode: 500, code: "secured_accounts_unavailable" });
    } finally {
      await mesh.restart("account");
    }
    expect(result(await list()).total).toBe(2);
  });

  it("svcctl account unlink revokes for the partner (reason platform); the partner's server reports credential_changed", async () => {
    const svcctl = (args: string[]) => runSvcctl(mesh, ["account", "unlink", ...args]);
    const unlink = ["--org", partner.organizationId, "--env", "development"];
    now = new Date(now.getTime() + 60_000);
    mesh.setClock(now);
    const revoked = await svcctl([...unlink, "--ref", "acct-older"]);
    expect(revoked.stderr).toBe("");
    expect(JSON.parse(revoked.stdout)).toEqual({
      handle: handles.older,
      unlinked_at: now.toISOString(),
      reason: "platform",
    });
    const changed = await api.post(
      "/secured-accounts/report-credential-change",
      { platform_user_ref: "acct-newer" },
      partner.devSecret,
    );
    expect(result(changed)).toEqual({ unlinked: true, handle: handles.newer });
    const again = await svcctl([...unlink, "--ref", "acct-older"]);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain("no active link");

    const unlinked = result(await list({ status: "unlinked" }));
    expect(unlinked.total).toBe(2);
    expect(unlinked.rows).toEqual([
      expect.objectContaining({
        handle: handles.newer,
        status: "unlinked",
        unlinked_by: "platform",
        unlink_reason: "credential_changed",
      }),
      expect.objectContaining({
        handle: handles.older,
        status: "unlinked",
        unlinked_at: now.toISOString(),
        unlinked_by: "platform",
        unlink_reason: "platform",
      }),
    ]);
    expect(result(await list({ status: "active" }))).toMatchObject({ rows: [], total: 0 });
  });
});
