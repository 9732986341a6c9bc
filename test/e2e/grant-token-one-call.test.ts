import { Environment } from "@svc/proto/common/v1/caller_pb.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestMesh, type TestMesh } from "../harness/test-mesh.ts";
import { dataError, newGate, newPartner, partnerApi, result } from "./gate-support.ts";

/**
 * create-verification-link hands the grant token to gate, which authenticates it in the same call; the
 * gateway counts the token before that. What a partner reads stays as it was: an unknown token is 401
 * whatever else the request met (a bad body, a spent per-token limit), and every other answer reports
 * the token's tier by its environment.
 */
const start = new Date("2026-11-20T12:00:03Z");

describe("a grant token authenticated by gate in the create call", () => {
  let mesh: TestMesh;
  let api: ReturnType<typeof partnerApi>;
  let partner: Awaited<ReturnType<typeof newPartner>>;

  beforeAll(async () => {
    // A clock that stands still: every call of a test falls in one minute's window.
    mesh = await startTestMesh("grant_one_call", { only: ["signing", "account", "gate"], clockAt: start });
    api = partnerApi(mesh);
    partner = await newPartner(mesh, "Shop");
    await newGate(mesh, partner.organizationId, { key: "checkout" });
    await newGate(mesh, partner.organizationId, { key: "checkout", environment: Environment.PRODUCTION });
  });
  afterAll(() => mesh?.stop());

  const session = async (credential: string) =>
    result(await api.post("/sdk/create-session", {}, credential)).anchor_grant_token as string;
  const link = (grant: string, body: Record<string, unknown>) => api.post("/sdk/create-verification-link", body, grant);
  const unknownGrant = () => `svcs_${Math.random().toString(36).slice(2).padEnd(43, "x").slice(0, 43)}`;

  it("answers an unknown token 401 before a body the schema refuses, with no _rateLimit", async () => {
    const refused = await link(unknownGrant(), { gate: "checkout", mode: "neither" });
    expect(dataError(refused)).toEqual({
      statusCode: 401,
      message: "the grant token is invalid, expired or already used",
    });
    expect(refused.body._rateLimit).toBeUndefined();
    const malformed = await link(await session(partner.devSecret), { gate: "checkout", mode: "neither" });
    expect(malformed.status).toBe(400);
    expect(malformed.body._rateLimit).toMatchObject({ scope: "bss_test", primary: { remaining: 59 } });
  });

  it("reports the tier of the token's environment on an answer and on gate's refusal, which leaves it usable", async () => {
    const dev = await session(partner.devSecret);
    const missing = await link(dev, { gate: "nowhere" });
    expect(dataError(missing).statusCode).toBe(400);
    expect(missing.body._rateLimit).toMatchObject({ scope: "bss_test", primary: { remaining: 59 } });
    const created = await link(dev, { gate: "checkout" });
    expect(result(created).request_id).toMatch(/^req_[0-9a-f]{32}$/);
    expect(created.body._rateLimit).toMatchObject({ scope: "bss_test", primary: { remaining: 58 } });
    const spent = await link(dev, { gate: "checkout" });
    expect(dataError(spent).statusCode).toBe(401);
    expect(spent.body._rateLimit).toBeUndefined();

    const production = await link(await session(partner.prodSecret), { gate: "checkout" });
    expect(result(production).request_id).toMatch(/^req_[0-9a-f]{32}$/);
    expect(production.body._rateLimit).toMatchObject({ scope: "bss_prod", primary: { remaining: 59 } });
  });

  it("blocks a token past its per-minute bucket with its tier's name; an unknown token past it stays 401", async () => {
    const grant = await session(partner.devSecret);
    const unknown = unknownGrant();
    for (let i = 0; i < 60; i++) {
      expect(dataError(await link(grant, { gate: "nowhere" })).statusCode).toBe(400);
      expect(dataError(await link(unknown, { gate: "checkout" })).statusCode).toBe(401);
    }
    const blocked = await link(grant, { gate: "checkout" });
    expect(blocked.status).toBe(403);
    expect(blocked.body).toMatchObject({
      errors: [{ code: "RATE_LIMITED" }],
      _rateLimit: { scope: "bss_test", primary: { bucket: "per_minute", limit: 60, remaining: 0 } },
    });
    expect(blocked.body.data).toBeUndefined();
    expect(dataError(await link(unknown, { gate: "checkout" })).statusCode).toBe(401);
  });
});
