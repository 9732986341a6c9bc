import { Environment } from "@svc/proto/common/v1/caller_pb.js";
import { KeyType } from "@svc/proto/console/v1/console_pb.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectDocumented } from "../harness/documented-answer.ts";
import { type GatewayReplica, replicaEnvOf, startGatewayReplica } from "../harness/gateway-replica.ts";
import { startTestMesh, type TestMesh } from "../harness/test-mesh.ts";

/**
 * A revoked API key is refused at once by every gateway replica: two gateway processes on one mesh, each
 * remembering the key for an hour (GATEWAY_API_KEY_CACHE_TTL), so only the console's CredentialChanged can
 * make them forget it. The revoke goes to the first replica's console; the second hears it through NATS.
 */

describe("API keys revoked, on two gateway replicas", () => {
  let mesh: TestMesh;
  let second: GatewayReplica;
  let document: Record<string, unknown>;
  let organizationId: string;
  const gateways = () => [mesh.gatewayUrl, second.url];

  /** POST /v1/sdk/create-session with the key on one replica: accepted, or the refusal it reads. */
  const createSession = async (gatewayUrl: string, key: string, origin?: string) => {
    const response = await fetch(`${gatewayUrl}/v1/sdk/create-session`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${key}`,
        "content-type": "application/json",
        ...(origin === undefined ? {} : { origin }),
      },
      body: "{}",
    });
    const answer = { status: response.status, body: await response.json(), headers: response.headers };
    expectDocumented(document, "POST", "/v1/sdk/create-session", answer);
    expect(answer.status).toBe(200);
    return answer.body.data.error === undefined ? "accepted" : answer.body.data.error;
  };
  const onBoth = (key: string, origin?: string) =>
    Promise.all(gateways().map((url) => createSession(url, key, origin)));
  const newKey = (type: KeyType, allowedOrigins: string[] = []) =>
    mesh.console.createKey({ organizationId, environment: Environment.DEVELOPMENT, type, allowedOrigins });

  beforeAll(async () => {
    mesh = await startTestMesh("apikeys_revoke", {
      only: ["signing", "gate"],
      // Remembered keys outlive the whole file: only the console's word can make a replica forget them.
      env: { GATEWAY_API_KEY_CACHE_TTL: "1h" },
    });
    second = await startGatewayReplica(replicaEnvOf(mesh));
    document = await (await fetch(`${mesh.gatewayUrl}/v1/openapi.json`)).json();
    ({ organizationId } = await mesh.console.createOrganization({ name: "Key revocations" }));
  });
  afterAll(async () => {
    await second?.stop();
    await mesh?.stop();
  });

  it("the first request after a secret key's revoke is refused on both replicas; another key still passes", async () => {
    const [revoked, kept] = [await newKey(KeyType.SECRET), await newKey(KeyType.SECRET)];
    for (const key of [revoked, kept]) {
      expect(await onBoth(key.key)).toEqual(["accepted", "accepted"]);
      // Both now answer from their cache.
      expect(await onBoth(key.key)).toEqual(["accepted", "accepted"]);
    }

    await mesh.console.revokeKey({ keyId: revoked.keyId });
    const refusal = { statusCode: 401, message: "the API key has been revoked" };
    expect(await onBoth(revoked.key)).toEqual([refusal, refusal]);
    expect(await onBoth(kept.key)).toEqual(["accepted", "accepted"]);
  });

  it("a revoked site key is refused on both replicas at once", async () => {
    const origin = "https://shop.example";
    const site = await newKey(KeyType.SITE, [origin]);
    expect(await onBoth(site.key, origin)).toEqual(["accepted", "accepted"]);

    await mesh.console.revokeKey({ keyId: site.keyId });
    const refusal = { statusCode: 403, message: "the site key has been revoked" };
    expect(await onBoth(site.key, origin)).toEqual([refusal, refusal]);
  });
});
