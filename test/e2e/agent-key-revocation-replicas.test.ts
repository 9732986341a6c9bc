import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectDocumented } from "../harness/documented-answer.ts";
import { type GatewayReplica, replicaEnvOf, startGatewayReplica } from "../harness/gateway-replica.ts";
import { runSvcctl } from "../harness/svcctl.ts";
import { startTestMesh, type TestMesh } from "../harness/test-mesh.ts";

/**
 * A revoked agent is refused at once by every gateway replica: two gateway processes on one mesh, each
 * with a cached answer for the agent's key that would live an hour (GATEWAY_AGENT_KEY_CACHE_TTL), hear
 * agentlink's CredentialChanged and forget it, so the first request after the revoke is refused on both.
 * A rotated key's older key is refused by both the moment its overlap ends, not when their cache expires.
 */
const start = new Date("2026-11-22T10:00:00Z");
const at = (ms: number) => new Date(start.getTime() + ms);
/** What every refused agent key reads, whatever the cause. */
const refusedAgentKey = {
  statusCode: 401,
  message: "a valid agent key is required: Authorization: Bearer svc_agent_<Name>__<secret>",
};

describe("agent keys revoked or rotated, on two gateway replicas", () => {
  let mesh: TestMesh;
  let second: GatewayReplica;
  let document: Record<string, unknown>;
  let organizationId: string;
  const gateways = () => [mesh.gatewayUrl, second.url];

  const svcctl = async (args: string[]) => {
    const run = await runSvcctl(mesh, args);
    expect(run.stderr, run.stderr).toBe("");
    expect(run.code).toBe(0);
    return JSON.parse(run.stdout);
  };
  const registerAgent = (name: string) =>
    svcctl([
      "agent",
      "register",
      "--org",
      organizationId,
      "--env",
      "development",
      "--name",
      name,
      "--category",
      "payments",
    ]);
  /** POST /v1/agent/bind-session with the key on one replica: accepted, or the plain 401 of an agent key. */
  const bindSession = async (gatewayUrl: string, agentKey: string) => {
    const response = await fetch(`${gatewayUrl}/v1/agent/bind-session`, {
      method: "POST",
      headers: { authorization: `Bearer ${agentKey}`, "content-type": "application/json" },
      body: "{}",
    });
    const answer = { status: response.status, body: await response.json(), headers: response.headers };
    expectDocumented(document, "POST", "/v1/agent/bind-session", answer);
    expect(answer.status).toBe(200);
    return answer.body.data.error === undefined ? "accepted" : answer.body.data.error;
  };
  const onBoth = (agentKey: string) => Promise.all(gateways().map((url) => bindSession(url, agentKey)));

  beforeAll(async () => {
    mesh = await startTestMesh("agents_revoke", {
      only: ["signing", "account", "agentlink"],
      clockAt: start,
      // Cached answers outlive the whole file: only agentlink's word can make a replica forget them.
      env: { GATEWAY_AGENT_KEY_CACHE_TTL: "1h", AGENTLINK_KEY_OVERLAP: "1m" },
    });
    second = await startGatewayReplica(replicaEnvOf(mesh));
    document = await (await fetch(`${mesh.gatewayUrl}/v1/openapi.json`)).json();
    ({ organizationId } = await mesh.console.createOrganization({ name: "Revocations" }));
  });
  afterAll(async () => {
    await second?.stop();
    await mesh?.stop();
  });

  it("the first request after a revoke is refused on both replicas", async () => {
    const agent = await registerAgent("Revoked_Bot");
    expect(await onBoth(agent.agent_key)).toEqual(["accepted", "accepted"]);
    // Both now answer from their cache.
    expect(await onBoth(agent.agent_key)).toEqual(["accepted", "accepted"]);

    await svcctl(["agent", "revoke", "--agent-id", agent.agent_id]);
    expect(await onBoth(agent.agent_key)).toEqual([refusedAgentKey, refusedAgentKey]);
  });

  it("another agent's cached answer survives a revoke; a rotated key's older key ends with its overlap on both", async () => {
    const [kept, rotated, other] = [
      await registerAgent("Kept_Bot"),
      await registerAgent("Rotated_Bot"),
      await registerAgent("Other_Bot"),
    ];
    for (const agent of [kept, rotated]) expect(await onBoth(agent.agent_key)).toEqual(["accepted", "accepted"]);
    await svcctl(["agent", "revoke", "--agent-id", other.agent_id]);
    expect(await onBoth(kept.agent_key)).toEqual(["accepted", "accepted"]);

    const { agent_key: newKey } = await svcctl(["agent", "rotate-key", "--agent-id", rotated.agent_id]);
    expect(await onBoth(rotated.agent_key)).toEqual(["accepted", "accepted"]);
    expect(await onBoth(newKey)).toEqual(["accepted", "accepted"]);
    mesh.setClock(at(60_000));
    expect(await onBoth(rotated.agent_key)).toEqual([refusedAgentKey, refusedAgentKey]);
    expect(await onBoth(newKey)).toEqual(["accepted", "accepted"]);
    mesh.setClock(start);
  });
});
