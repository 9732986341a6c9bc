import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestMesh, type TestMesh } from "../harness/test-mesh.ts";
import { dataError, newGate, newPartner, partnerApi, result } from "./gate-support.ts";

/**
 * `gate_required` (decisions.md) through the gateway: the operations that need a gate key, called with
 * neither `gate` nor its old name `scope`, refuse in `data.error`; a refused create-verification-link
 * leaves its grant token usable; a gate key that is present but malformed stays a validation error; and
 * from the sunset on `scope` alone is `alias_retired`, not `gate_required`.
 */
const beforeSunset = new Date("2026-11-20T12:00:00Z");
const afterSunset = new Date("2027-01-16T12:00:00Z");

describe("an operation that needs a gate key, called without one", () => {
  let mesh: TestMesh;
  let api: ReturnType<typeof partnerApi>;
  let partner: Awaited<ReturnType<typeof newPartner>>;

  beforeAll(async () => {
    mesh = await startTestMesh("gate_required", { only: ["signing", "account", "gate"], clockAt: beforeSunset });
    api = partnerApi(mesh);
    partner = await newPartner(mesh, "Shop");
    await newGate(mesh, partner.organizationId, { key: "checkout" });
  });
  afterAll(() => mesh?.stop());

  const grant = async () =>
    result(await api.post("/sdk/create-session", { partner_user_id: "u-1" }, partner.devSecret))
      .anchor_grant_token as string;
  const gateRequired = {
    statusCode: 400,
    code: "gate_required",
    message: expect.stringMatching(/\bgate\b.*\bscope\b/),
  };
  const withoutGate = {
    createVerificationLink: (grantToken: string) =>
      api.post("/sdk/create-verification-link", { partner_user_ref: "u-1" }, grantToken),
    revokeVerification: () => api.post("/sdk/revoke-verification", { partner_user_id: "u-1" }, partner.devSecret),
    partnerConfig: () => api.get("/sdk/partner-config", {}, partner.devSecret),
  };

  it("create-verification-link refuses with gate_required, and the same grant token then succeeds", async () => {
    const grantToken = await grant();
    expect(dataError(await withoutGate.createVerificationLink(grantToken))).toEqual(gateRequired);
    const created = result(
      await api.post("/sdk/create-verification-link", { gate: "checkout", partner_user_ref: "u-1" }, grantToken),
    );
    expect(created).toMatchObject({ request_id: expect.stringMatching(/^req_/), gate: "checkout" });
    // Accepted once, the token is spent: the refusal above is what left it usable.
    expect(
      dataError(await api.post("/sdk/create-verification-link", { gate: "checkout" }, grantToken)).statusCode,
    ).toBe(401);
  });

  it("revoke-verification and partner-config refuse with gate_required; scope alone is read as gate", async () => {
    expect(dataError(await withoutGate.revokeVerification())).toEqual(gateRequired);
    expect(dataError(await withoutGate.partnerConfig())).toEqual(gateRequired);
    expect(
      result(
        await api.post("/sdk/revoke-verification", { scope: "checkout", partner_user_id: "u-1" }, partner.devSecret),
      ),
    ).toMatchObject({ success: true });
    expect(result(await api.get("/sdk/partner-config", { scope: "checkout" }, partner.devSecret))).toMatchObject({
      gate: "checkout",
    });
  });

  it("a gate key that is present but malformed stays an InputValidationError, under either name", async () => {
    const refusals = [
      [await api.post("/sdk/create-verification-link", { gate: "" }, await grant()), "gate"],
      [await api.post("/sdk/revoke-verification", { gate: 42, partner_user_id: "u-1" }, partner.devSecret), "gate"],
      [await api.get("/sdk/partner-config", { gate: "" }, partner.devSecret), "gate"],
      [await api.get("/sdk/partner-config", { scope: "" }, partner.devSecret), "scope"],
    ] as const;
    for (const [reply, name] of refusals) {
      expect(reply.status).toBe(400);
      expect(reply.body).toMatchObject({ code: "InputValidationError", errors: [{ propertyPath: name }] });
    }
  });

  it("from the sunset on, scope alone is alias_retired, and neither name is still gate_required", async () => {
    mesh.setClock(afterSunset);
    try {
      expect(dataError(await api.get("/sdk/partner-config", { scope: "checkout" }, partner.devSecret)).code).toBe(
        "alias_retired",
      );
      expect(dataError(await withoutGate.partnerConfig())).toEqual(gateRequired);
      expect(dataError(await withoutGate.revokeVerification())).toEqual(gateRequired);
      expect(dataError(await withoutGate.createVerificationLink(await grant()))).toEqual(gateRequired);
    } finally {
      mesh.setClock(beforeSunset);
    }
  });
});
