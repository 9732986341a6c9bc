import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runSvcctl } from "../harness/svcctl.ts";
import { startTestMesh, type TestMesh } from "../harness/test-mesh.ts";
import { agentBoundToSilentHuman, svcctlJson } from "./agent-support.ts";
import { dataError, partnerApi, result } from "./gate-support.ts";

/**
 * Agents Ask proposals through the gateway against the real mesh: inquire for a person bound to the agent
 * (a sandbox human, claimed with svcctl) or named by svc_user_id (by user_email: agents-inquire-email.test.ts),
 * idempotent replays, check-status as the shared clock moves past ttl_at, cancel, the expire sweep driven by the
 * shared clock through svcctl, the operator's audit log of a card (svcctl agent audit), and every refusal of
 * inquire, check-status and cancel the partner can meet. The long-poll of check-status is agents-long-poll.test.ts's.
 */
const start = new Date("2026-11-24T09:00:00Z");

describe("agents ask: inquire, check-status, cancel, the expire sweep", () => {
  let mesh: TestMesh;
  let api: ReturnType<typeof partnerApi>;
  let agentKey: string;
  let agentId: string;
  let opaqueId: string;
  let person: string;

  const json = (args: string[]) => svcctlJson(mesh)(args);
  const action = { summary_title: "Pay invoice 2231 to Acme", category: "payments" };
  const inquire = (body: Record<string, unknown>, key = agentKey) =>
    api.post("/agentlink/inquire", { request_id: randomUUID(), opaque_id: opaqueId, action, ...body }, key);

  beforeAll(async () => {
    mesh = await startTestMesh("agents_inquire", {
      only: ["signing", "account", "agentlink"],
      clockAt: start,
      // The test runs the expire sweep by hand and counts what it expired: agentlink's own must not run first.
      env: { AGENTLINK_SWEEP_EVERY: "1h" },
    });
    api = partnerApi(mesh);
    ({ agentKey, agentId, person, opaqueId } = await agentBoundToSilentHuman(mesh, api, {
      organization: "Inquirers",
      name: "Pay_Bot",
      categories: ["payments", "travel"],
    }));
  });
  afterAll(async () => {
    await mesh?.stop();
  });

  it("queues a card for the bound person, and answers a repeat with the first card", async () => {
    const requestId = randomUUID();
    const queued = result(await inquire({ request_id: requestId, ttl_seconds: 120 }));
    expect(queued).toEqual({
      status: "queued",
      card_id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      ttl_at: new Date(start.getTime() + 120_000).toISOString(),
    });
    const repeat = result(
      await inquire({ request_id: requestId, action: { summary_title: "Another title", category: "travel" } }),
    );
    expect(repeat).toEqual({ ...queued, idempotent_replay: true });
  });

  it("names the person by svc_user_id, with a default ttl of 600 seconds", async () => {
    const queued = result(await inquire({ opaque_id: undefined, svc_user_id: person }));
    expect(queued.ttl_at).toBe(new Date(start.getTime() + 600_000).toISOString());
  });

  it("refuses a proposal without exactly one identifier of the person", async () => {
    expect(dataError(await inquire({ opaque_id: undefined })).statusCode).toBe(400);
    expect(dataError(await inquire({ svc_user_id: person })).statusCode).toBe(400);
  });

  it("refuses a ttl outside 60-86400 with its bound", async () => {
    expect(dataError(await inquire({ ttl_seconds: 59 }))).toEqual({
      statusCode: 400,
      code: "ttl_below_floor",
      min_ttl_seconds: 60,
      message: "ttl_seconds must be at least 60",
    });
    expect(dataError(await inquire({ ttl_seconds: 86_401 }))).toEqual({
      statusCode: 400,
      code: "ttl_above_ceiling",
      max_ttl_seconds: 86_400,
      message: "ttl_seconds must be at most 86400",
    });
  });

  it("refuses a category the agent was not registered with", async () => {
    const error = dataError(await inquire({ action: { ...action, category: "crypto" } }));
    expect([error.statusCode, error.code]).toEqual([403, "category_not_allowed"]);
  });

  it("answers 404 for an unknown opaque_id, an unknown svc_user_id and an unknown user_email", async () => {
    expect(dataError(await inquire({ opaque_id: "not-a-binding" })).statusCode).toBe(404);
    expect(dataError(await inquire({ opaque_id: undefined, svc_user_id: randomUUID() })).statusCode).toBe(404);
    expect(dataError(await inquire({ opaque_id: undefined, user_email: "someone@example.com" })).statusCode).toBe(404);
  });

  it("answers 422 trust_layer_rejected with the violations, and queues nothing", async () => {
    const requestId = randomUUID();
    const rejected = dataError(
      await inquire({ request_id: requestId, action: { ...action, summary_title: "Pay\u202Eevil" } }),
    ) as Record<string, unknown>;
    expect(rejected).toMatchObject({ statusCode: 422, code: "trust_layer_rejected", retryable: false });
    expect(rejected.violations).toEqual(
      expect.arrayContaining([expect.objectContaining({ path: "/action/summary_title", severity: "error" })]),
    );
    // Nothing was stored: the same request_id, fixed, is a new card.
    expect(result(await inquire({ request_id: requestId })).idempotent_replay).toBeUndefined();
  });

  it("refuses each proposal text over its limit (120/80/40/80 characters) with the 400 of input validation, and queues nothing", async () => {
    const detail = { label: "Amount", value: "EUR 120.00" };
    // Characters are code points: a text of emoji at the limit passes, though it is twice as many UTF-16 units.
    const atLimit = {
      summary_title: "😀".repeat(120),
      category: "payments",
      summary_detail: { label: "€".repeat(40), value: "𝄞".repeat(80) },
    };
    expect(result(await inquire({ action: atLimit })).status).toBe("queued");
    const cases: [path: string, body: Record<string, unknown>, value: string, limit: number][] = [
      ["action.summary_title", { ...action, summary_title: "😀".repeat(121) }, "😀".repeat(121), 120],
      ["action.category", { ...action, category: "p".repeat(81) }, "p".repeat(81), 80],
      [
        "action.summary_detail.label",
        { ...action, summary_detail: { ...detail, label: "l".repeat(41) } },
        "l".repeat(41),
        40,
      ],
      [
        "action.summary_detail.value",
        { ...action, summary_detail: { ...detail, value: "v".repeat(81) } },
        "v".repeat(81),
        80,
      ],
    ];
    for (const [path, body, value, limit] of cases) {
      const requestId = randomUUID();
      const sent = { request_id: requestId, opaque_id: opaqueId, action: body };
      const reply = await api.post("/agentlink/inquire", sent, agentKey);
      const message = `${path} must be at most ${limit} characters long`;
      // Besides the development rate-limit report, the whole body.
      const { _rateLimit, ...answer } = reply.body;
      expect([reply.status, answer], path).toEqual([
        400,
        {
          code: "InputValidationError",
          message: `Input validation failed: ${message}`,
          input: sent,
          errors: [{ propertyPath: path, invalidValue: value, message }],
        },
      ]);
      // Nothing was queued: the same request_id within the limits is a new card.
      expect(result(await inquire({ request_id: requestId })).idempotent_replay, path).toBeUndefined();
    }

    // Every text over its limit at once, each reported, in the order of the fields.
    const allOver = {
      summary_title: "t".repeat(121),
      category: "c".repeat(81),
      summary_detail: { label: "l".repeat(41), value: "v".repeat(81) },
    };
    const reply = await inquire({ action: allOver });
    expect(reply.status).toBe(400);
    expect(reply.body.errors.map((issue: { propertyPath: string }) => issue.propertyPath)).toEqual([
      "action.summary_title",
      "action.category",
      "action.summary_detail.label",
      "action.summary_detail.value",
    ]);
  });

  it("refuses a malformed body before agentlink sees it", async () => {
    const reply = await inquire({ request_id: "not-a-uuid", action: { category: "payments" } });
    expect(reply.status).toBe(400);
    expect(reply.body.code).toBe("InputValidationError");
  });

  it("reads a card's status at once, queued and then expired past ttl_at; another request_id is 404", async () => {
    mesh.setClock(start);
    const requestId = randomUUID();
    const { ttl_at } = result(await inquire({ request_id: requestId, ttl_seconds: 60 }));
    const status = (query: Record<string, unknown>) => api.get("/agentlink/check-status", query, agentKey);
    expect(result(await status({ request_id: requestId }))).toEqual({
      status: "queued",
      ttl_at,
      resolved_at: null,
      ceremony_id: null,
      resolution_jwt: null,
      verdict: null,
      delivered: false,
      callback_attempts: 0,
    });
    mesh.setClock(new Date(start.getTime() + 60_000));
    expect(result(await status({ request_id: requestId }))).toMatchObject({ status: "expired", resolved_at: ttl_at });
    mesh.setClock(start);

    expect(dataError(await status({ request_id: randomUUID() }))).toEqual({
      statusCode: 404,
      message: "no proposal with that request_id for this agent",
    });
  });

  it("cancels a queued card once; a later cancel answers already_resolved; another request_id is 404", async () => {
    mesh.setClock(start);
    const requestId = randomUUID();
    const { card_id } = result(await inquire({ request_id: requestId }));
    const cancel = (body: Record<string, unknown>) => api.post("/agentlink/cancel", body, agentKey);
    expect(result(await cancel({ request_id: requestId, reason: "paid by phone" }))).toEqual({
      status: "cancelled",
      card_id,
      cancelled_at: start.toISOString(),
    });
    expect(result(await cancel({ request_id: requestId }))).toEqual({
      status: "cancelled",
      card_id,
      cancelled_at: start.toISOString(),
      already_resolved: true,
    });
    expect(result(await api.get("/agentlink/check-status", { request_id: requestId }, agentKey)).status).toBe(
      "cancelled",
    );
    expect(dataError(await cancel({ request_id: randomUUID() })).statusCode).toBe(404);
    expect((await cancel({ request_id: requestId, reason: "x".repeat(201) })).body.code).toBe("InputValidationError");
  });

  it("expires a queued card past ttl_at in the sweep (svcctl agent sweep), once", async () => {
    const later = new Date(start.getTime() + 2 * 86_400_000);
    mesh.setClock(later);
    await json(["agent", "sweep", "--limit", "1000"]); // every earlier test's card is past its ttl_at now
    const requestId = randomUUID();
    result(await inquire({ request_id: requestId, ttl_seconds: 60 }));
    mesh.setClock(new Date(later.getTime() + 59_999));
    expect(await json(["agent", "sweep"])).toEqual({ expired_count: 0 });
    mesh.setClock(new Date(later.getTime() + 60_000));
    expect(await json(["agent", "sweep"])).toEqual({ expired_count: 1 });
    expect(await json(["agent", "sweep"])).toEqual({ expired_count: 0 });
    expect(result(await api.get("/agentlink/check-status", { request_id: requestId }, agentKey))).toMatchObject({
      status: "expired",
      resolved_at: new Date(later.getTime() + 60_000).toISOString(),
    });
    await expect(json(["agent", "sweep", "--limit", "1001"])).rejects.toThrow(/limit must be 1-1000/);
    mesh.setClock(start);
  });

  it("shows the operator a card's audit log (svcctl agent audit): who changed it, when and why", async () => {
    const proposedAt = new Date(start.getTime() + 3 * 86_400_000);
    mesh.setClock(proposedAt);
    const cancelledId = randomUUID();
    const cancelled = result(await inquire({ request_id: cancelledId })).card_id;
    const expiringId = randomUUID();
    const expiring = result(await inquire({ request_id: expiringId, ttl_seconds: 60 })).card_id;
    const cancelledAt = new Date(proposedAt.getTime() + 5_000);
    mesh.setClock(cancelledAt);
    result(await api.post("/agentlink/cancel", { request_id: cancelledId, reason: "paid by phone" }, agentKey));
    const sweptAt = new Date(proposedAt.getTime() + 60_000);
    mesh.setClock(sweptAt);
    expect(await json(["agent", "sweep"])).toEqual({ expired_count: 1 });
    mesh.setClock(start);

    const proposed = { action: "card.proposed", actor: `agent:${agentId}`, at: proposedAt.toISOString(), detail: null };
    expect(await json(["agent", "audit", "--card-id", cancelled])).toEqual({
      card_id: cancelled,
      agent_id: agentId,
      request_id: cancelledId,
      status: "cancelled",
      entries: [
        proposed,
        {
          action: "card.cancelled",
          actor: `agent:${agentId}`,
          at: cancelledAt.toISOString(),
          detail: { reason: "paid by phone" },
        },
      ],
    });
    expect(await json(["agent", "audit", "--card-id", expiring])).toEqual({
      card_id: expiring,
      agent_id: agentId,
      request_id: expiringId,
      status: "expired",
      entries: [proposed, { action: "card.expired", actor: "sweep", at: sweptAt.toISOString(), detail: null }],
    });

    const unknown = await runSvcctl(mesh, ["agent", "audit", "--card-id", randomUUID()]);
    expect([unknown.code, unknown.stdout]).toEqual([1, ""]);
    expect(unknown.stderr).toMatch(/^svcctl: NotFound: no card has the id [0-9a-f-]{36}\n$/);
    const malformed = await runSvcctl(mesh, ["agent", "audit", "--card-id", "card-1"]);
    expect([malformed.code, malformed.stderr]).toEqual([1, "svcctl: InvalidArgument: card_id must be a uuid\n"]);
  });
});
