import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runSvcctl } from "../harness/svcctl.ts";
import { startTestMesh, type TestMesh } from "../harness/test-mesh.ts";
import { confirmedNotarizeRequest, newGate, newPartner, partnerApi, result } from "./gate-support.ts";

/**
 * The spec's console switch behind `notarize` ("a gate's console switch turns the offer on; neither
 * attribute can turn it on when the switch is off"), switched with svcctl as an operator does, and
 * judged by what a partner sees: whether a confirmed `notarize` request on the gate secured the account.
 */
const start = new Date(Date.now() + 60_000);

describe("the notarize offer switch end to end", () => {
  let mesh: TestMesh;
  let api: ReturnType<typeof partnerApi>;
  let partner: Awaited<ReturnType<typeof newPartner>>;

  beforeAll(async () => {
    mesh = await startTestMesh("notarize_offer", { only: ["signing", "account", "gate"], clockAt: start });
    api = partnerApi(mesh);
    partner = await newPartner(mesh, "Notarize switch");
    await newGate(mesh, partner.organizationId, { key: "login" });
  });
  afterAll(async () => {
    await mesh?.stop();
  });

  const switchOffer = (value: string, key = "login", env = "development") =>
    runSvcctl(mesh, [
      "gate",
      "set-notarize-offer",
      "--org",
      partner.organizationId,
      "--env",
      env,
      "--key",
      key,
      "--notarize-offer",
      value,
    ]);
  const offered = async () =>
    result(await api.get("/sdk/partner-config", { gate: "login" }, partner.devSecret)).notarize_offered as boolean;
  const securedRows = async (reference: string) =>
    result(await api.get("/secured-accounts/list", { platform_user_ref: reference }, partner.devSecret)).rows;

  /** A sandbox human confirms a `notarize` request for `reference` on the gate; its status record. */
  async function confirmNotarize(reference: string) {
    return (await confirmedNotarizeRequest(mesh, partner, reference)).record;
  }

  it("off, on, off: only a request made while the switch is on secures the account", async () => {
    // Off (as created): notarize cannot turn the offer on.
    expect(await offered()).toBe(false);
    expect(await confirmNotarize("acct-before")).toMatchObject({ trusted: false, first_time: false });
    expect(await securedRows("acct-before")).toEqual([]);

    const on = await switchOffer("on");
    expect(on.stderr).toBe("");
    expect(on.code).toBe(0);
    expect(JSON.parse(on.stdout)).toMatchObject({
      organization_id: partner.organizationId,
      environment: "development",
      key: "login",
      status: "active",
      notarize_offer: true,
    });
    expect(await offered()).toBe(true);
    // The gate was read by the request before: the switch still holds for the next one.
    expect(await confirmNotarize("acct-on")).toMatchObject({ trusted: true, first_time: true });
    expect(await securedRows("acct-on")).toEqual([expect.objectContaining({ status: "active" })]);

    const off = await switchOffer("off");
    expect(off.code).toBe(0);
    expect(JSON.parse(off.stdout)).toMatchObject({ key: "login", notarize_offer: false });
    expect(await offered()).toBe(false);
    expect(await confirmNotarize("acct-after")).toMatchObject({ trusted: false, first_time: false });
    expect(await securedRows("acct-after")).toEqual([]);
    // The account secured while the switch was on stays secured.
    expect(await securedRows("acct-on")).toEqual([expect.objectContaining({ status: "active" })]);
  });

  it("an unknown gate, or one the environment does not have, is refused and nothing changes; a bad value is a usage error", async () => {
    const unknown = await switchOffer("on", "no-such-gate");
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain("no gate");
    const otherEnvironment = await switchOffer("on", "login", "production");
    expect(otherEnvironment.code).toBe(1);
    expect(otherEnvironment.stderr).toContain("no gate");
    expect((await switchOffer("yes")).code).toBe(2);
    expect(await offered()).toBe(false);
  });
});
