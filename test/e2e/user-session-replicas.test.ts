import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type GatewayReplica, replicaEnvOf, startGatewayReplica } from "../harness/gateway-replica.ts";
import { startTestMesh, type TestMesh } from "../harness/test-mesh.ts";

/**
 * A person who deletes their account is named by no gateway replica afterwards: two gateway processes on one
 * mesh, each remembering whom the person's session names for an hour (GATEWAY_USER_SESSION_CACHE_TTL), hear
 * account's CredentialChanged and forget it, so the session's first request after the deletion, on either
 * replica, resolves its sign-in identity afresh: a new, empty person, the same on both.
 */
describe("a deleted person's session, on two gateway replicas", () => {
  let mesh: TestMesh;
  let second: GatewayReplica;
  const gateways = () => [mesh.gatewayUrl, second.url];

  beforeAll(async () => {
    mesh = await startTestMesh("sessions_deleted", {
      only: ["signing", "account", "agentlink"],
      // Remembered answers outlive the whole file: only account's word can make a replica forget them.
      env: { GATEWAY_USER_SESSION_CACHE_TTL: "1h" },
    });
    second = await startGatewayReplica(replicaEnvOf(mesh));
  });
  afterAll(async () => {
    await second?.stop();
    await mesh?.stop();
  });

  const app = async (gatewayUrl: string, path: string, session: string, body?: Record<string, unknown>) => {
    const response = await fetch(`${gatewayUrl}/v1/app${path}`, {
      method: body ? "POST" : "GET",
      headers: { authorization: `Bearer ${session}`, ...(body && { "content-type": "application/json" }) },
      ...(body && { body: JSON.stringify(body) }),
    });
    expect(response.status).toBe(200);
    const answer = await response.json();
    expect(answer.data.error).toBeUndefined();
    return answer.data.data;
  };
  /** Whom the session names on each replica, asked one after the other. */
  const whomOnBoth = async (session: string) => {
    const named: string[] = [];
    for (const gatewayUrl of gateways()) named.push((await app(gatewayUrl, "/me", session)).svc_user_id);
    return named;
  };
  const signIn = async (subject: string) =>
    (await mesh.console.mintDevSession({ issuer: mesh.devIdpIssuer, subject })).sessionToken;

  it("the first request after the deletion, on either replica, names a new person", async () => {
    const [session, bystander] = [await signIn("deleted-person"), await signIn("bystander")];
    const [deleted] = await whomOnBoth(session);
    expect(await whomOnBoth(session)).toEqual([deleted, deleted]);
    const [kept] = await whomOnBoth(bystander);

    expect(await app(mesh.gatewayUrl, "/account/delete", session, { confirm: "delete my account" })).toEqual({
      deleted: true,
    });
    const [afresh, onSecond] = await whomOnBoth(session);
    expect(afresh).not.toBe(deleted);
    expect(onSecond).toBe(afresh);
    expect(await app(second.url, "/secured-accounts", session)).toEqual({ accounts: [] });
    expect(await whomOnBoth(bystander)).toEqual([kept, kept]);
  });

  it("a deletion made through the other replica is heard too", async () => {
    const session = await signIn("deleted-on-second");
    const [deleted] = await whomOnBoth(session);
    await app(second.url, "/account/delete", session, { confirm: "delete my account" });
    const [afresh, onSecond] = await whomOnBoth(session);
    expect(afresh).not.toBe(deleted);
    expect(onSecond).toBe(afresh);
  });
});
