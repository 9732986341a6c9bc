import { Environment } from "@svc/proto/common/v1/caller_pb.js";
import { KeyType } from "@svc/proto/console/v1/console_pb.js";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestMesh, type TestMesh } from "../harness/test-mesh.ts";
import { dataError, newGate, newPartner, partnerApi, result } from "./gate-support.ts";

/**
 * Idempotency-Key through the real mesh (gateway, gate, signing as processes): create-session replays
 * its grant token per credential, and the ambiguous create-verification-link of issue 17 is recovered:
 * gate dies by SIGKILL between its commit and its answer (its test-only fault point), the partner reads
 * "retry", and the retry with the same key, once gate is back, gets the request that was created.
 */
describe("Idempotency-Key across the mesh", () => {
  let mesh: TestMesh;
  let api: ReturnType<typeof partnerApi>;
  let partner: Awaited<ReturnType<typeof newPartner>>;
  let db: pg.Client;
  const key = (value: string) => ({ "Idempotency-Key": value });

  beforeAll(async () => {
    mesh = await startTestMesh("idempotency", { only: ["signing", "gate"] });
    api = partnerApi(mesh);
    partner = await newPartner(mesh, "Idempotent partner");
    await newGate(mesh, partner.organizationId, { key: "checkout" });
    db = new pg.Client({ connectionString: mesh.env.SVC_DATABASE_URL });
    await db.connect();
  });
  afterAll(async () => {
    await db?.end();
    await mesh?.stop();
  });

  it("create-session: a retry replays the same grant token; another credential with the key runs on its own", async () => {
    const body = { partner_user_id: "user-1" };
    const first = await api.post("/sdk/create-session", body, partner.devSecret, key("session-1"));
    const token = result(first).anchor_grant_token;
    const again = await api.post("/sdk/create-session", body, partner.devSecret, key("session-1"));
    expect(again.body.data).toEqual(first.body.data);
    const otherKey = await partner.key(Environment.DEVELOPMENT, KeyType.SECRET);
    const other = result(await api.post("/sdk/create-session", body, otherKey, key("session-1")));
    expect(other.anchor_grant_token).not.toBe(token);
    expect(
      dataError(
        await api.post("/sdk/create-session", { partner_user_id: "user-2" }, partner.devSecret, key("session-1")),
      ),
    ).toEqual({
      statusCode: 409,
      code: "idempotency_key_reused",
      message: "this Idempotency-Key was used with a different request",
    });
  });

  it("create-verification-link: gate dies between its commit and its answer; the retry gets the request it created", async () => {
    const grant = result(await api.post("/sdk/create-session", {}, partner.devSecret)).anchor_grant_token;
    const body = { gate: "checkout", partner_user_ref: "user-9" };
    await mesh.restart("gate", { GATE_TEST_CRASH_AFTER_CREATE: "true" });

    const lost = await api.post("/sdk/create-verification-link", body, grant, key("link-1"));
    expect(dataError(lost)).toEqual({ statusCode: 500, message: "the request could not be created; retry" });
    const { rows } = await db.query<{ request_id: string }>(
      `select s.request_id from gate.sessions s join gate.requests r on r.id = s.request_id
       where s.organization_id = $1 and r.partner_ref_hash is not null`,
      [partner.organizationId],
    );
    expect(rows).toHaveLength(1);
    const created = rows[0]?.request_id;

    await mesh.restart("gate", { GATE_TEST_CRASH_AFTER_CREATE: "false" });
    const retried = result(await api.post("/sdk/create-verification-link", body, grant, key("link-1")));
    expect(retried).toMatchObject({ request_id: created, gate: "checkout", sdk_type: "signal" });
    expect(retried.web_url).toContain(created);
    // The web_url opens the request: the flow secret is the one gate made at the first call.
    const secret = new URL(retried.web_url).hash.replace(/^#/, "");
    expect(secret.length).toBeGreaterThan(0);

    // Retries after that are the gateway's replay; the status reads the one request, still pending.
    const replay = await api.post("/sdk/create-verification-link", body, grant, key("link-1"));
    expect(replay.body.data.data).toEqual(retried);
    const status = await api.get("/verification/status", { request_id: created }, partner.devSecret);
    expect(result(status, true)).toMatchObject({ found: true, status: "pending" });

    // The token stays used for anything else: without the key, with another key, and another body is 409.
    expect(dataError(await api.post("/sdk/create-verification-link", body, grant)).statusCode).toBe(401);
    expect(dataError(await api.post("/sdk/create-verification-link", body, grant, key("link-2"))).statusCode).toBe(401);
    expect(
      dataError(await api.post("/sdk/create-verification-link", { gate: "checkout" }, grant, key("link-1"))).code,
    ).toBe("idempotency_key_reused");
    const count = await db.query(`select count(*)::int as n from gate.requests where organization_id = $1`, [
      partner.organizationId,
    ]);
    expect(count.rows[0].n).toBe(1);
  });
});
