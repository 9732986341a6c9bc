import { createHash } from "node:crypto";
import { Environment } from "@svc/proto/common/v1/caller_pb.js";
import { KeyType } from "@svc/proto/console/v1/console_pb.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runSvcctl } from "../harness/svcctl.ts";
import { startTestMesh, type TestMesh } from "../harness/test-mesh.ts";
import { dataError, gateConsole, newGate, newPartner, partnerApi, result } from "./gate-support.ts";

/**
 * The partner's gate operations through the gateway against the real mesh: create-session,
 * create-verification-link, status, revoke, logout and partner-config with every error row of the
 * spec's tables, the 409 rule clause by clause, both environments, and expiry with the clock.
 * The person's side (ceremonies, tokens, events) is in gate-ceremony.test.ts.
 */
const start = new Date("2026-11-20T12:00:00Z");
const origin = "https://shop.example";

describe("gate partner operations through the gateway", () => {
  let mesh: TestMesh;
  let api: ReturnType<typeof partnerApi>;
  let partner: Awaited<ReturnType<typeof newPartner>>;
  let other: Awaited<ReturnType<typeof newPartner>>;
  let now = start;
  const moveClock = (ms: number) => {
    now = new Date(now.getTime() + ms);
    mesh.setClock(now);
  };

  beforeAll(async () => {
    // A test sweeps by ExpireRequests and counts what it expired: a timed sweep must not take them first.
    mesh = await startTestMesh("gate_partner", {
      only: ["signing", "account", "gate"],
      clockAt: start,
      env: { GATE_SWEEP_EVERY: "1h" },
    });
    api = partnerApi(mesh);
    partner = await newPartner(mesh, "Shop");
    other = await newPartner(mesh, "Other");
    await newGate(mesh, partner.organizationId, { key: "checkout" });
    await newGate(mesh, partner.organizationId, { key: "checkout", environment: Environment.PRODUCTION, age: 18 });
    await newGate(mesh, partner.organizationId, { key: "adults", age: 21, notarizeOffer: true });
    await newGate(mesh, partner.organizationId, { key: "drafted", status: "draft" });
    await newGate(mesh, partner.organizationId, { key: "dev-only" });
    await newGate(mesh, other.organizationId, { key: "checkout" });
  });
  afterAll(() => mesh?.stop());

  const session = async (
    credential: string,
    body: Record<string, unknown> = {},
    headers: Record<string, string> = {},
  ) => result(await api.post("/sdk/create-session", body, credential, headers)).anchor_grant_token as string;
  const link = (grant: string, body: Record<string, unknown>) => api.post("/sdk/create-verification-link", body, grant);
  const status = (requestId: string, credential = partner.devSecret) =>
    api.get("/verification/status", { request_id: requestId }, credential);

  describe("create-session", () => {
    it("issues a single-use svcs_ grant token for a secret key and for a site key from an allowed origin", async () => {
      const data = result(
        await api.post("/sdk/create-session", { partner_user_id: "u-1", metadata: { cart: "42" } }, partner.devSecret),
      );
      expect(data.anchor_grant_token).toMatch(/^svcs_[A-Za-z0-9]{43}$/);
      expect(data.organization).toEqual({ id: partner.organizationId });
      expect(data.expires_at).toBe(new Date(now.getTime() + 300_000).toISOString());
      expect(await session(partner.devSite, {}, { origin })).toMatch(/^svcs_/);
    });

    it("answers 401 for secret-key problems: no bearer, unknown, revoked, expired", async () => {
      expect(dataError(await api.post("/sdk/create-session", {})).statusCode).toBe(401);
      expect(
        dataError(await api.post("/sdk/create-session", {}, undefined, { authorization: partner.devSecret }))
          .statusCode,
      ).toBe(401);
      expect(dataError(await api.post("/sdk/create-session", {}, `svc_dev_${"x".repeat(32)}`)).statusCode).toBe(401);
      const { key, keyId } = await mesh.console.createKey({
        organizationId: partner.organizationId,
        environment: Environment.DEVELOPMENT,
        type: KeyType.SECRET,
      });
      await mesh.console.revokeKey({ keyId });
      expect(dataError(await api.post("/sdk/create-session", {}, key)).statusCode).toBe(401);
      const expiring = await mesh.console.createKey({
        organizationId: partner.organizationId,
        environment: Environment.DEVELOPMENT,
        type: KeyType.SECRET,
        expiresAt: { seconds: BigInt(Math.floor(now.getTime() / 1000) + 1), nanos: 0 },
      });
      moveClock(2000);
      expect(dataError(await api.post("/sdk/create-session", {}, expiring.key)).statusCode).toBe(401);
    });

    it("answers 403 for site-key problems: unknown, revoked, no Origin, origin not allowed", async () => {
      expect(
        dataError(await api.post("/sdk/create-session", {}, `pk_test_${"y".repeat(32)}`, { origin })).statusCode,
      ).toBe(403);
      expect(dataError(await api.post("/sdk/create-session", {}, partner.devSite)).statusCode).toBe(403);
      expect(
        dataError(await api.post("/sdk/create-session", {}, partner.devSite, { origin: "https://evil.example" }))
          .statusCode,
      ).toBe(403);
      const { key, keyId } = await mesh.console.createKey({
        organizationId: partner.organizationId,
        environment: Environment.DEVELOPMENT,
        type: KeyType.SITE,
        allowedOrigins: [origin],
      });
      await mesh.console.revokeKey({ keyId });
      expect(dataError(await api.post("/sdk/create-session", {}, key, { origin })).statusCode).toBe(403);
    });
  });

  describe("create-verification-link", () => {
    it("answers the spec's response for a Human Gate and consumes the grant token", async () => {
      const grant = await session(partner.devSecret);
      const data = result(
        await link(grant, {
          gate: "checkout",
          return_url: "https://shop.example/done",
          user_email: "ignored@example.com",
          link_on_verify: true,
          webhook_url: "https://x.example",
        }),
      );
      expect(data.request_id).toMatch(/^req_[0-9a-f]{32}$/);
      expect(data).toMatchObject({
        expires_at: new Date(now.getTime() + 300_000).toISOString(),
        pushed_to_devices: 0,
        sdk_type: "signal",
        auth_mode: "private",
        gate: "checkout",
        organization: { id: partner.organizationId },
        gate_type: "human",
      });
      expect(data.age_threshold).toBeUndefined();
      expect(data.web_url).toMatch(new RegExp(`^http://127\\.0\\.0\\.1:8080/flow/${data.request_id}#t=`));
      expect(data.deep_link).toMatch(new RegExp(`^svc://verify/${data.request_id}\\?t=`));
      expect(data.qr_code_url).toBe(
        `http://127.0.0.1:8080/v1/qr/${data.request_id}.svg?${new URL(data.deep_link).search.slice(1)}`,
      );
      expect(JSON.stringify(data)).not.toContain("ignored@example.com");
      expect(dataError(await link(grant, { gate: "checkout" })).statusCode).toBe(401);
      expect(result(await status(data.request_id), true)).toMatchObject({
        found: true,
        status: "pending",
        expires_at: data.expires_at,
      });
    });

    it("answers an Age Gate with gate_type age and its threshold, and honours mode", async () => {
      const data = result(await link(await session(partner.devSecret), { gate: "adults", mode: "linked-account" }));
      expect(data).toMatchObject({ gate: "adults", gate_type: "age", age_threshold: 21, auth_mode: "linked-account" });
    });

    it("answers 401 without a bearer, for API keys and site keys, and for unknown grant tokens", async () => {
      expect(dataError(await link("", { gate: "checkout" })).statusCode).toBe(401);
      expect(dataError(await api.post("/sdk/create-verification-link", { gate: "checkout" })).statusCode).toBe(401);
      expect(dataError(await link(partner.devSecret, { gate: "checkout" })).statusCode).toBe(401);
      expect(
        dataError(await api.post("/sdk/create-verification-link", { gate: "checkout" }, partner.devSite, { origin }))
          .statusCode,
      ).toBe(401);
      expect(dataError(await link(`svcs_${"z".repeat(43)}`, { gate: "checkout" })).statusCode).toBe(401);
      expect(dataError(await link("svcs_short", { gate: "checkout" })).statusCode).toBe(401);
    });

    it("answers 400 when the credential's environment has no Active gate with the key, and consumes nothing", async () => {
      const grant = await session(partner.devSecret);
      for (const gate of ["nowhere", "drafted", "Checkout"])
        expect(dataError(await link(grant, { gate })).statusCode).toBe(400);
      const prodGrant = await session(partner.prodSecret);
      expect(dataError(await link(prodGrant, { gate: "dev-only" })).statusCode).toBe(400);
      expect(result(await link(grant, { gate: "checkout" })).gate).toBe("checkout");
    });

    it("finds the same key as a separate gate per environment", async () => {
      const dev = result(await link(await session(partner.devSecret), { gate: "checkout" }));
      const prod = result(await link(await session(partner.prodSecret), { gate: "checkout" }));
      expect(dev.gate_type).toBe("human");
      expect(prod).toMatchObject({ gate_type: "age", age_threshold: 18 });
      expect(result(await status(prod.request_id, partner.prodSecret), true).status).toBe("pending");
      expect(result(await status(prod.request_id, partner.devSecret), true)).toMatchObject({
        found: false,
        status: "not_found",
      });
    });

    it("does not tell whether an svc_user_id exists: an unknown one is pushed to no device", async () => {
      const created = result(
        await link(await session(partner.devSecret), { gate: "checkout", svc_user_id: crypto.randomUUID() }),
      );
      expect(created).toMatchObject({ pushed_to_devices: 0, auth_mode: "linked-account" });
    });

    it("takes only an http or https return_url", async () => {
      const refused = await link(await session(partner.devSecret), {
        gate: "checkout",
        return_url: "javascript:alert(1)//",
      });
      expect(refused.status).toBe(400);
      expect(refused.body.errors[0].propertyPath).toBe("return_url");
    });

    it("answers 403 for a gate not in the key's allowed gates", async () => {
      const restricted = await partner.key(Environment.DEVELOPMENT, KeyType.SECRET, { allowedGates: ["adults"] });
      const grant = await session(restricted);
      expect(dataError(await link(grant, { gate: "checkout" })).statusCode).toBe(403);
      expect(result(await link(grant, { gate: "adults" })).gate).toBe("adults");
    });

    it("spends a grant token once under 16-way contention", async () => {
      const grant = await session(partner.devSecret, { partner_user_id: "contended" });
      const replies = await Promise.all(Array.from({ length: 16 }, () => link(grant, { gate: "checkout" })));
      const accepted = replies.filter((r) => r.status === 200 && r.body.data.data);
      expect(accepted).toHaveLength(1);
      for (const r of replies.filter((x) => !x.body.data.data)) expect(dataError(r).statusCode).toBe(401);
    });

    it("refuses bad input with an HTTP 400 naming the field", async () => {
      const grant = await session(partner.devSecret);
      const reply = await link(grant, { gate: "checkout", svc_user_id: "not-a-uuid", mode: "sideways" });
      expect(reply.status).toBe(400);
      expect(reply.body.errors.map((e: { propertyPath: string }) => e.propertyPath).sort()).toEqual([
        "mode",
        "svc_user_id",
      ]);
      expect(result(await link(grant, { gate: "checkout" })).gate).toBe("checkout");
    });
  });

  describe("the 409 rule", () => {
    it("clause 1: the same user is partner_user_ref, else the session's partner_user_id", async () => {
      result(await link(await session(partner.devSecret, { partner_user_id: "alice" }), { gate: "checkout" }));
      const blocked = dataError(
        await link(await session(partner.devSecret), { gate: "checkout", partner_user_ref: "alice" }),
      );
      expect(blocked.statusCode).toBe(409);
      // A ref names the user even when the session names another.
      expect(
        dataError(
          await link(await session(partner.devSecret, { partner_user_id: "someone-else" }), {
            gate: "checkout",
            partner_user_ref: "alice",
          }),
        ).statusCode,
      ).toBe(409);
      expect(
        result(
          await link(await session(partner.devSecret, { partner_user_id: "alice" }), {
            gate: "checkout",
            partner_user_ref: "alice-2",
          }),
        ).gate,
      ).toBe("checkout");
    });

    it("clause 2: only pending unexpired requests block, per gate and environment", async () => {
      result(await link(await session(partner.devSecret, { partner_user_id: "bob" }), { gate: "checkout" }));
      expect(
        result(await link(await session(partner.devSecret, { partner_user_id: "bob" }), { gate: "adults" })).gate,
      ).toBe("adults");
      expect(
        result(await link(await session(partner.prodSecret, { partner_user_id: "bob" }), { gate: "checkout" })).gate,
      ).toBe("checkout");
      expect(
        result(await link(await session(other.devSecret, { partner_user_id: "bob" }), { gate: "checkout" })).gate,
      ).toBe("checkout");
    });

    it("clause 3: requests with neither value are not checked", async () => {
      result(await link(await session(partner.devSecret), { gate: "checkout" }));
      result(await link(await session(partner.devSecret), { gate: "checkout" }));
    });

    it("clause 4: a site-key session without partner_user_id is not checked; with one it is", async () => {
      result(
        await link(await session(partner.devSite, {}, { origin }), { gate: "checkout", partner_user_ref: "carol" }),
      );
      result(
        await link(await session(partner.devSite, {}, { origin }), { gate: "checkout", partner_user_ref: "carol" }),
      );
      result(
        await link(await session(partner.devSite, { partner_user_id: "carol-site" }, { origin }), { gate: "checkout" }),
      );
      expect(
        dataError(
          await link(await session(partner.devSite, { partner_user_id: "carol-site" }, { origin }), {
            gate: "checkout",
          }),
        ).statusCode,
      ).toBe(409);
    });

    it("clause 5: revoke clears it and the same grant token creates again; a rejected call consumed nothing", async () => {
      const first = result(
        await link(await session(partner.devSecret, { partner_user_id: "dave" }), {
          gate: "checkout",
          partner_user_ref: "dave-ref",
        }),
      );
      const grant = await session(partner.devSecret);
      expect(dataError(await link(grant, { gate: "checkout", partner_user_ref: "dave-ref" })).statusCode).toBe(409);
      expect(dataError(await link(grant, { gate: "checkout", partner_user_ref: "dave-ref" })).statusCode).toBe(409);
      const revoked = result(
        await api.post(
          "/sdk/revoke-verification",
          { gate: "checkout", partner_user_id: "dave-ref" },
          partner.devSecret,
        ),
      );
      expect(revoked).toMatchObject({ success: true, revoked_count: 1 });
      expect(typeof revoked.message).toBe("string");
      expect(result(await status(first.request_id), true).status).toBe("expired");
      expect(result(await link(grant, { gate: "checkout", partner_user_ref: "dave-ref" })).gate).toBe("checkout");
    });
  });

  describe("revoke-verification", () => {
    it("revoke_count 0 is a success; completed and other users' requests are untouched", async () => {
      const kept = result(
        await link(await session(partner.devSecret, { partner_user_id: "erin" }), { gate: "checkout" }),
      );
      expect(
        result(
          await api.post(
            "/sdk/revoke-verification",
            { gate: "checkout", partner_user_id: "nobody" },
            partner.devSecret,
          ),
        ),
      ).toMatchObject({ success: true, revoked_count: 0 });
      expect(
        result(
          await api.post("/sdk/revoke-verification", { gate: "adults", partner_user_id: "erin" }, partner.devSecret),
        ).revoked_count,
      ).toBe(0);
      expect(result(await status(kept.request_id), true).status).toBe("pending");
      expect(
        result(
          await api.post("/sdk/revoke-verification", { gate: "checkout", partner_user_id: "erin" }, partner.devSite, {
            origin,
          }),
        ).revoked_count,
      ).toBe(1);
    });

    it("answers 400 without partner_user_id or an Active gate, 401 without a valid API key", async () => {
      expect(
        dataError(await api.post("/sdk/revoke-verification", { gate: "checkout" }, partner.devSecret)).statusCode,
      ).toBe(400);
      expect(
        dataError(
          await api.post("/sdk/revoke-verification", { gate: "drafted", partner_user_id: "x" }, partner.devSecret),
        ).statusCode,
      ).toBe(400);
      expect(
        dataError(await api.post("/sdk/revoke-verification", { gate: "checkout", partner_user_id: "x" })).statusCode,
      ).toBe(401);
      expect(
        dataError(
          await api.post(
            "/sdk/revoke-verification",
            { gate: "checkout", partner_user_id: "x" },
            `svc_dev_${"q".repeat(32)}`,
          ),
        ).statusCode,
      ).toBe(401);
    });

    it("answers 403 for a gate the key may not use, and ends nothing", async () => {
      const pending = result(
        await link(await session(partner.devSecret, { partner_user_id: "frida" }), { gate: "checkout" }),
      );
      const restricted = await partner.key(Environment.DEVELOPMENT, KeyType.SECRET, { allowedGates: ["adults"] });
      expect(
        dataError(
          await api.post("/sdk/revoke-verification", { gate: "checkout", partner_user_id: "frida" }, restricted),
        ).statusCode,
      ).toBe(403);
      expect(result(await status(pending.request_id), true).status).toBe("pending");
    });
  });

  describe("logout", () => {
    it("revokes an unused grant token, flat under data; revoked false when already used or revoked", async () => {
      const grant = await session(partner.devSecret);
      const reply = await api.post("/sdk/logout", { anchor_grant_token: grant }, partner.devSecret);
      expect(result(reply, true)).toEqual({ success: true, revoked: true });
      expect(result(await api.post("/sdk/logout", { anchor_grant_token: grant }, partner.devSecret), true)).toEqual({
        success: true,
        revoked: false,
      });
      expect(dataError(await link(grant, { gate: "checkout" })).statusCode).toBe(401);
      const used = await session(partner.devSecret);
      result(await link(used, { gate: "checkout" }));
      expect(result(await api.post("/sdk/logout", { anchor_grant_token: used }, partner.devSecret), true).revoked).toBe(
        false,
      );
    });

    it("answers 403 for another organization's grant token, 401 without an API key", async () => {
      const grant = await session(partner.devSecret);
      expect(dataError(await api.post("/sdk/logout", { anchor_grant_token: grant }, other.devSecret)).statusCode).toBe(
        403,
      );
      expect(dataError(await api.post("/sdk/logout", { anchor_grant_token: grant })).statusCode).toBe(401);
      expect(
        dataError(await api.post("/sdk/logout", { anchor_grant_token: grant }, `svc_dev_${"w".repeat(32)}`)).statusCode,
      ).toBe(401);
      expect(result(await link(grant, { gate: "checkout" })).gate).toBe("checkout");
    });
  });

  describe("status", () => {
    it("reads not_found for unknown ids and for another organization's requests; 401 without a credential", async () => {
      const mine = result(await link(await session(partner.devSecret), { gate: "checkout" }));
      expect(result(await status(`req_${"0".repeat(32)}`), true)).toEqual({
        found: false,
        status: "not_found",
        message: expect.any(String),
      });
      expect(result(await status("garbage"), true).status).toBe("not_found");
      expect(result(await status(mine.request_id, other.devSecret), true)).toMatchObject({
        found: false,
        status: "not_found",
      });
      expect(
        result(
          await api.get("/verification/status", { request_id: mine.request_id }, partner.devSite, { origin }),
          true,
        ).status,
      ).toBe("pending");
      expect(dataError(await api.get("/verification/status", { request_id: mine.request_id })).statusCode).toBe(401);
    });
  });

  describe("partner-config", () => {
    it("tells the widget how to render a gate", async () => {
      const data = result(await api.get("/sdk/partner-config", { gate: "adults" }, partner.devSite, { origin }));
      expect(data).toEqual({
        gate: "adults",
        gate_type: "age",
        age_threshold: 21,
        status: "active",
        notarize_offered: true,
        organization: { id: partner.organizationId },
        request_lifetime_seconds: 300,
        widget: { url: expect.stringMatching(/\/v1\/widget\.[0-9a-f]{16}\.js$/), integrity: expect.any(String) },
        // Added by the alias stage during the rename window.
        scope: "adults",
        status_legacy: "approved",
      });
      // The published hash is the script's own: a page loading it with `integrity` runs it.
      const script = await mesh.fetch(new URL(new URL(data.widget.url).pathname, mesh.gatewayUrl));
      expect(script.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
      const code = Buffer.from(await script.arrayBuffer());
      expect(data.widget.integrity).toBe(`sha384-${createHash("sha384").update(code).digest("base64")}`);
      const current = await mesh.fetch(new URL("/v1/widget.js", mesh.gatewayUrl));
      expect(current.headers.get("cache-control")).toBe("public, max-age=300");
      expect(Buffer.from(await current.arrayBuffer()).equals(code)).toBe(true);
      const again = await mesh.fetch(new URL("/v1/widget.js", mesh.gatewayUrl), {
        headers: { "if-none-match": current.headers.get("etag") ?? "" },
      });
      expect(again.status).toBe(304);
      expect(result(await api.get("/sdk/partner-config", { gate: "drafted" }, partner.devSecret))).toMatchObject({
        status: "draft",
        gate_type: "human",
        notarize_offered: false,
      });
    });

    it("answers 400 for an unknown gate and 403 for a gate the key may not use", async () => {
      expect(dataError(await api.get("/sdk/partner-config", { gate: "nowhere" }, partner.devSecret)).statusCode).toBe(
        400,
      );
      const restricted = await partner.key(Environment.DEVELOPMENT, KeyType.SECRET, { allowedGates: ["adults"] });
      expect(dataError(await api.get("/sdk/partner-config", { gate: "checkout" }, restricted)).statusCode).toBe(403);
    });
  });

  describe("svcctl gate", () => {
    const run = async (...argv: string[]) => {
      const { code, stdout, stderr } = await runSvcctl(mesh, argv);
      return { code, out: stdout ? JSON.parse(stdout) : undefined, err: stderr };
    };

    it("creates, lists with old and new status names, and sets the status of gates", async () => {
      const created = await run(
        "gate",
        "create",
        "--org",
        partner.organizationId,
        "--env",
        "development",
        "--key",
        "cli-gate",
        "--type",
        "age",
        "--age-threshold",
        "16",
        "--notarize-offer",
      );
      expect(created.code).toBe(0);
      expect(created.out).toMatchObject({
        key: "cli-gate",
        type: "age",
        age_threshold: 16,
        status: "draft",
        status_legacy: "pending",
        notarize_offer: true,
        environment: "development",
      });
      const drafts = await run("gate", "list", "--org", partner.organizationId, "--status", "pending_revisions");
      expect(drafts.out.gates.map((g: { key: string }) => g.key).sort()).toEqual(["cli-gate", "drafted"]);
      const set = await run(
        "gate",
        "set-status",
        "--org",
        partner.organizationId,
        "--env",
        "development",
        "--key",
        "cli-gate",
        "--status",
        "approved",
      );
      expect(set.out).toMatchObject({ status: "active", status_legacy: "approved" });
      const active = await run(
        "gate",
        "list",
        "--org",
        partner.organizationId,
        "--env",
        "production",
        "--status",
        "active",
      );
      expect(active.out.gates.map((g: { key: string }) => g.key)).toEqual(["checkout"]);
      const archived = await run(
        "gate",
        "set-status",
        "--org",
        partner.organizationId,
        "--env",
        "development",
        "--key",
        "cli-gate",
        "--status",
        "denied",
      );
      expect(archived.out).toMatchObject({ status: "archived", status_legacy: "denied" });
      expect(
        (
          await run(
            "gate",
            "create",
            "--org",
            partner.organizationId,
            "--env",
            "development",
            "--key",
            "x",
            "--type",
            "age",
          )
        ).code,
      ).toBe(2);
      expect(
        (
          await run(
            "gate",
            "create",
            "--org",
            partner.organizationId,
            "--env",
            "development",
            "--key",
            "cli-gate",
            "--type",
            "human",
          )
        ).code,
      ).toBe(1);
    });
  });

  describe("with the clock", () => {
    it("a grant token lives five minutes", async () => {
      const grant = await session(partner.devSecret);
      moveClock(300_000);
      expect(dataError(await link(grant, { gate: "checkout" })).statusCode).toBe(401);
      expect(
        result(await api.post("/sdk/logout", { anchor_grant_token: grant }, partner.devSecret), true).revoked,
      ).toBe(false);
    });

    it("a request nobody opens reads expired after five minutes, lazily and after the sweep, and no longer blocks", async () => {
      const grant = await session(partner.devSecret, { partner_user_id: "frank" });
      const created = result(await link(grant, { gate: "checkout" }));
      moveClock(299_000);
      expect(result(await status(created.request_id), true).status).toBe("pending");
      expect(
        dataError(await link(await session(partner.devSecret, { partner_user_id: "frank" }), { gate: "checkout" }))
          .statusCode,
      ).toBe(409);
      moveClock(1_000);
      expect(result(await status(created.request_id), true)).toMatchObject({
        status: "expired",
        expires_at: created.expires_at,
      });
      expect((await gateConsole(mesh).expireRequests({ limit: 1000 })).expiredCount).toBeGreaterThan(0);
      expect(result(await status(created.request_id), true).status).toBe("expired");
      expect(
        result(await link(await session(partner.devSecret, { partner_user_id: "frank" }), { gate: "checkout" })).gate,
      ).toBe("checkout");
    });
  });
});
