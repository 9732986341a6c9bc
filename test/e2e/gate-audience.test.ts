import { createClient } from "@connectrpc/connect";
import { AccountConsoleService, SandboxBehavior } from "@svc/proto/account/v1/account_pb.js";
import { Environment } from "@svc/proto/common/v1/caller_pb.js";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { startTestMesh, type TestMesh } from "../harness/test-mesh.ts";
import { newGate, newPartner, partnerApi, result, verifyIndependently } from "./gate-support.ts";

/**
 * decisions.md "The `audience` claim": every attestation a gate issues carries `audience`, the
 * organization id of the gate's partner, and verify-token's optional `audience` is compared with it.
 * Tokens come from real confirmations (a sandbox human) and are checked through the gateway.
 */
const start = new Date(Date.now() + 60_000);

describe("the audience claim of gate attestations", () => {
  let mesh: TestMesh;
  let api: ReturnType<typeof partnerApi>;
  let partner: Awaited<ReturnType<typeof newPartner>>;

  beforeAll(async () => {
    mesh = await startTestMesh("gate_audience", { only: ["signing", "account", "gate"], clockAt: start });
    api = partnerApi(mesh);
    partner = await newPartner(mesh, "Audience");
    await newGate(mesh, partner.organizationId, { key: "login" });
    await newGate(mesh, partner.organizationId, { key: "adults", age: 18 });
  });
  afterAll(async () => {
    await mesh?.stop();
  });

  /** A sandbox human confirms a request on `gate`; the status record's token. */
  async function confirmedToken(gate: string) {
    const { svcUserId } = await createClient(AccountConsoleService, mesh.consoleTransport()).createSandboxHuman({
      environment: Environment.DEVELOPMENT,
      behavior: SandboxBehavior.CONFIRM,
      age: 30,
    });
    const grant = result(await api.post("/sdk/create-session", {}, partner.devSecret)).anchor_grant_token as string;
    const link = result(await api.post("/sdk/create-verification-link", { gate, svc_user_id: svcUserId }, grant));
    return vi.waitFor(
      async () => {
        const status = result(
          await api.get("/verification/status", { request_id: link.request_id }, partner.devSecret),
          true,
        );
        if (status.status !== "completed") throw new Error(`still ${status.status}`);
        return { token: status.token as string, requestId: link.request_id as string };
      },
      { timeout: 15_000, interval: 100 },
    );
  }

  const verify = async (body: Record<string, unknown>) => result(await api.post("/sdk/verify-token", body));

  it("every token a gate issues names its partner's organization as audience", async () => {
    for (const gate of ["login", "adults"]) {
      const { token, requestId } = await confirmedToken(gate);
      const claims = await verifyIndependently(mesh, token, start);
      expect(claims).toMatchObject({ request_id: requestId, organization_id: partner.organizationId });
      expect(claims.audience).toBe(partner.organizationId);
    }
  });

  it("verify-token with another organization's id is audience_mismatch; with the partner's own it passes", async () => {
    const { token } = await confirmedToken("login");
    const other = await newPartner(mesh, "Another platform");

    const refused = await verify({ token, audience: other.organizationId });
    expect(refused).toMatchObject({ valid: false, reason: "audience_mismatch", replayed: false });
    expect(refused.verdict).toBeUndefined();
    expect(refused.claims).toMatchObject({ audience: partner.organizationId });

    // A refused audience is no check of the token: the partner's own check is still the first.
    expect(await verify({ token, audience: partner.organizationId })).toMatchObject({
      valid: true,
      verdict: "pass",
      replayed: false,
      claims: { audience: partner.organizationId, organization_id: partner.organizationId },
    });
  });
});
