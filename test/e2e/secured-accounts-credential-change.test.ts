import { createInternalClient } from "@svc/platform";
import { AccountService, NoticeKind } from "@svc/proto/account/v1/account_pb.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runSvcctl } from "../harness/svcctl.ts";
import { startTestMesh, type TestMesh } from "../harness/test-mesh.ts";
import { confirmedNotarizeRequest, dataError, newGate, newPartner, partnerApi, result } from "./gate-support.ts";
import { type PartnerEndpoint, startPartnerEndpoint } from "./partner-endpoint.ts";

/**
 * `POST /secured-accounts/report-credential-change` through the gateway (decisions.md "Reporting a
 * changed sign-in detail"), over accounts secured the real way (a sandbox human confirms a notarize
 * request). The partner reads account.unlinked at its own endpoint, signed; the person's notices are
 * read from the account service as the app reads them.
 */
const start = new Date(Date.now() + 60_000);
const path = "/secured-accounts/report-credential-change";

describe("reporting a changed sign-in detail end to end", () => {
  let mesh: TestMesh;
  let api: ReturnType<typeof partnerApi>;
  let partner: Awaited<ReturnType<typeof newPartner>>;
  let endpoint: PartnerEndpoint;
  let now = start;
  const moveClock = (ms: number) => {
    now = new Date(now.getTime() + ms);
    mesh.setClock(now);
  };

  beforeAll(async () => {
    mesh = await startTestMesh("credential_change", {
      only: ["signing", "account", "gate", "webhook-dispatch"],
      clockAt: start,
    });
    api = partnerApi(mesh);
    partner = await newPartner(mesh, "Credential change");
    endpoint = await startPartnerEndpoint(mesh, partner.organizationId, ["account.unlinked"]);
    await newGate(mesh, partner.organizationId, { key: "login", notarizeOffer: true });
  });
  afterAll(async () => {
    await mesh?.stop();
    endpoint?.close();
  });

  const report = (body: Record<string, unknown>, key = partner.devSecret, headers: Record<string, string> = {}) =>
    api.post(path, body, key, headers);
  const rowOf = async (reference: string) =>
    result(await api.get("/secured-accounts/list", { platform_user_ref: reference }, partner.devSecret)).rows[0];
  const notices = async (svcUserId: string) =>
    (await createInternalClient(AccountService, mesh.urls.account!).listNotices({ svcUserId })).notices;
  const unlinkedEvents = (handle: string) =>
    endpoint.deliveries().filter((d) => d.body.type === "account.unlinked" && d.body.handle === handle);

  /** A sandbox human confirms a notarize request for `reference`: the account is then secured. */
  async function secure(reference: string) {
    const { svcUserId, record } = await confirmedNotarizeRequest(mesh, partner, reference);
    expect(record).toMatchObject({ trusted: true, first_time: true });
    return { svcUserId, handle: (await rowOf(reference)).handle as string };
  }

  it("an active link ends by platform, reason credential_changed: {unlinked: true, handle}, account.unlinked, a relink_offer", async () => {
    const { svcUserId, handle } = await secure("acct-changed");
    moveClock(60_000);
    const idempotencyKey = { "Idempotency-Key": crypto.randomUUID() };
    expect(result(await report({ platform_user_ref: "acct-changed" }, partner.devSecret, idempotencyKey))).toEqual({
      unlinked: true,
      handle,
    });

    const event = await endpoint.waitFor((b) => b.type === "account.unlinked" && b.handle === handle);
    expect(event.body).toEqual({
      type: "account.unlinked",
      handle,
      by: "platform",
      reason: "credential_changed",
      unlinked_at: now.toISOString(),
      surface_id: null,
    });
    expect(await rowOf("acct-changed")).toMatchObject({
      handle,
      status: "unlinked",
      unlinked_at: now.toISOString(),
      unlinked_by: "platform",
      unlink_reason: "credential_changed",
    });
    expect(await notices(svcUserId)).toEqual([
      expect.objectContaining({ kind: NoticeKind.RELINK_OFFER, organizationId: partner.organizationId, handle }),
    ]);

    // A retry is harmless: with the same Idempotency-Key the first answer, without one `unlinked: false`.
    expect(result(await report({ platform_user_ref: "acct-changed" }, partner.devSecret, idempotencyKey))).toEqual({
      unlinked: true,
      handle,
    });
    expect(result(await report({ platform_user_ref: "acct-changed" }))).toEqual({ unlinked: false });
    expect(await notices(svcUserId)).toHaveLength(1);
    // An event sent after the retries has arrived; the retries sent none.
    const marker = await secure("acct-marker");
    expect(result(await report({ platform_user_ref: "acct-marker" }))).toEqual({
      unlinked: true,
      handle: marker.handle,
    });
    await endpoint.waitFor((b) => b.type === "account.unlinked" && b.handle === marker.handle);
    expect(unlinkedEvents(handle)).toHaveLength(1);
  });

  it("an unknown reference, another organization's key and the other environment's key answer {unlinked: false} and change nothing", async () => {
    const { handle } = await secure("acct-kept");
    const other = await newPartner(mesh, "Another platform");
    expect(result(await report({ platform_user_ref: "acct-unknown" }))).toEqual({ unlinked: false });
    expect(result(await report({ platform_user_ref: "acct-kept" }, other.devSecret))).toEqual({ unlinked: false });
    expect(result(await report({ platform_user_ref: "acct-kept" }, partner.prodSecret))).toEqual({ unlinked: false });
    expect(await rowOf("acct-kept")).toMatchObject({ handle, status: "active", unlink_reason: null });
  });

  it("bad input is an HTTP 400 InputValidationError naming platform_user_ref, and changes nothing", async () => {
    const { handle } = await secure("acct-input");
    for (const body of [
      {},
      { platform_user_ref: "" },
      { platform_user_ref: "   " },
      { platform_user_ref: "x".repeat(513) },
      { platform_user_ref: 42 },
      { platform_user_ref: ["acct-input"] },
      { platform_user_ref: null },
    ]) {
      const reply = await report(body);
      expect(reply.status, JSON.stringify(body).slice(0, 80)).toBe(400);
      expect(reply.body).toMatchObject({
        code: "InputValidationError",
        message: expect.any(String),
        input: expect.any(Object),
        errors: [{ propertyPath: "platform_user_ref", message: expect.any(String) }],
      });
    }
    expect(result(await report({ platform_user_ref: "x".repeat(512) }))).toEqual({ unlinked: false });
    expect(await rowOf("acct-input")).toMatchObject({ handle, status: "active" });
  });

  it("takes a secret API key only: no bearer, a site key, a grant token, an agent key or an unknown key is 401", async () => {
    const { handle } = await secure("acct-auth");
    const body = { platform_user_ref: "acct-auth" };
    const grant = result(await api.post("/sdk/create-session", {}, partner.devSecret)).anchor_grant_token as string;
    const refusals = [
      await api.post(path, body),
      await report(body, partner.devSite, { origin: "https://shop.example" }),
      await report(body, grant),
      // Refused by its form before any agent is looked up: this operation takes no agent key at all.
      await report(body, `svc_agent_Shopper__${"A".repeat(43)}`),
      await report(body, `svc_dev_${"A".repeat(32)}`),
    ];
    for (const reply of refusals) {
      const error = dataError(reply);
      expect(error).toMatchObject({ statusCode: 401, message: expect.any(String) });
      expect(error.code).toBeUndefined();
    }
    expect(await rowOf("acct-auth")).toMatchObject({ handle, status: "active" });
  });

  it("the console's Revoke always ends a link with reason platform; svcctl has no --credential-changed", async () => {
    const { svcUserId, handle } = await secure("acct-revoked");
    const unlink = ["account", "unlink", "--org", partner.organizationId, "--env", "development", "--ref"];
    const refused = await runSvcctl(mesh, [...unlink, "acct-revoked", "--credential-changed"]);
    expect(refused.code).toBe(2);
    expect((await rowOf("acct-revoked")).status).toBe("active");

    const revoked = await runSvcctl(mesh, [...unlink, "acct-revoked"]);
    expect(revoked.stderr).toBe("");
    expect(JSON.parse(revoked.stdout)).toMatchObject({ handle, reason: "platform" });
    const event = await endpoint.waitFor((b) => b.type === "account.unlinked" && b.handle === handle);
    expect(event.body).toMatchObject({ by: "platform", reason: "platform" });
    expect(await notices(svcUserId)).toEqual([expect.objectContaining({ kind: NoticeKind.ACCOUNT_REVOKED, handle })]);
    // The link is gone: a report afterwards finds none.
    expect(result(await report({ platform_user_ref: "acct-revoked" }))).toEqual({ unlinked: false });
  });
});
