import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type DocumentedAnswer, expectDocumented } from "../harness/documented-answer.ts";
import { type HttpsPushPath, httpsPushPath } from "../harness/https-push-path.ts";
import { startPushService, type TestPushService } from "../harness/push-service.ts";
import { startTestMesh, type TestMesh } from "../harness/test-mesh.ts";
import { dataError, newGate, newPartner, partnerApi, type Reply, result } from "./gate-support.ts";

/**
 * Web Push through the gateway against the real mesh (decisions.md "Web Push"): the person's app
 * registers, lists and removes subscriptions; a gate request naming them reaches the push service
 * (VAPID and RFC 8291 checked there) and counts in `pushed_to_devices`; a kill of account between the
 * push's commit and the push service's answer loses nothing and sends it again under one Topic. The push
 * service is https and speaks HTTP/2, as the public ones do: account, a process of its own, is told to trust its
 * certificate as an operator would be for a private one (NODE_EXTRA_CA_CERTS) and to take https on 127.0.0.1.
 */
const start = new Date("2026-11-28T09:00:00Z");
type Json = Record<string, unknown>;

describe("web push", () => {
  let mesh: TestMesh;
  let api: ReturnType<typeof partnerApi>;
  let partner: Awaited<ReturnType<typeof newPartner>>;
  let pushService: TestPushService;
  let document: Json;
  let pushPath: HttpsPushPath;

  beforeAll(async () => {
    pushPath = await httpsPushPath();
    mesh = await startTestMesh("web_push", {
      only: ["signing", "account", "agentlink", "gate"],
      clockAt: start,
      env: pushPath.env,
    });
    api = partnerApi(mesh);
    partner = await newPartner(mesh, "Push Shop");
    await newGate(mesh, partner.organizationId, { key: "plain" });
    document = (await (await fetch(`${mesh.gatewayUrl}/v1/openapi.json`)).json()) as Json;
    const anyone = await person();
    pushService = await startPushService({
      vapidPublicKey: async () => result(await api.get("/app/push-key", {}, anyone.sessionToken)).public_key,
      // The mesh's clock stands at `start`, and the JWT's expiry follows it.
      now: () => start,
      tls: { certificate: pushPath.certificate, http2: true },
    });
  });
  afterAll(async () => {
    await pushService?.stop();
    await mesh?.stop();
    pushPath?.remove();
  });

  async function person() {
    const { sessionToken } = await mesh.console.mintDevSession({
      issuer: mesh.devIdpIssuer,
      subject: `push-${randomUUID()}`,
    });
    const me = result(await api.get("/app/me", {}, sessionToken));
    return { svcUserId: me.svc_user_id as string, sessionToken };
  }
  const documented = (method: string, path: string, reply: Reply) => {
    expectDocumented(document, method, `/v1${path}`, { status: reply.status, body: reply.body } as DocumentedAnswer);
    return reply;
  };
  const remove = async (id: string, sessionToken: string): Promise<Reply> => {
    const response = await fetch(`${mesh.gatewayUrl}/v1/app/push-subscriptions/${encodeURIComponent(id)}`, {
      method: "DELETE",
      headers: { authorization: `Bearer ${sessionToken}` },
    });
    return documented("DELETE", `/app/push-subscriptions/${id}`, {
      status: response.status,
      body: await response.json(),
    });
  };
  const subscribe = async (sessionToken: string) => {
    const subscription = pushService.subscribe();
    const added = documented(
      "POST",
      "/app/push-subscriptions",
      await api.post("/app/push-subscriptions", { ...subscription }, sessionToken),
    );
    return { ...subscription, id: result(added).id as string };
  };

  it("serves the VAPID key, and registers, lists and removes the person's subscriptions", async () => {
    const me = await person();
    const key = documented("GET", "/app/push-key", await api.get("/app/push-key", {}, me.sessionToken));
    expect(Buffer.from(result(key).public_key, "base64url")).toHaveLength(65);

    const phone = await subscribe(me.sessionToken);
    const listed = documented(
      "GET",
      "/app/push-subscriptions",
      await api.get("/app/push-subscriptions", {}, me.sessionToken),
    );
    expect(result(listed).subscriptions).toEqual([
      {
        id: phone.id,
        push_host: new URL(pushService.origin).host,
        created_at: start.toISOString(),
        last_pushed_at: null,
      },
    ]);

    const other = await person();
    expect(dataError(await remove(phone.id, other.sessionToken)).statusCode).toBe(404);
    expect(result(await remove(phone.id, me.sessionToken))).toEqual({ removed: true });
    expect(result(await api.get("/app/push-subscriptions", {}, me.sessionToken)).subscriptions).toEqual([]);
    expect(dataError(await remove(phone.id, me.sessionToken)).statusCode).toBe(404);
  });

  it("refuses an endpoint off the push-service policy, malformed keys and no session, creating nothing", async () => {
    const me = await person();
    const { keys } = pushService.subscribe();
    const refused = documented(
      "POST",
      "/app/push-subscriptions",
      await api.post("/app/push-subscriptions", { endpoint: "https://evil.example/push/1", keys }, me.sessionToken),
    );
    expect(dataError(refused)).toMatchObject({ statusCode: 400 });
    expect(dataError(refused).message).toMatch(/endpoint must be https on a known push service/);
    const badKeys = await api.post(
      "/app/push-subscriptions",
      { endpoint: `${pushService.origin}/push/x`, keys: { p256dh: "AAAA", auth: keys.auth } },
      me.sessionToken,
    );
    expect(dataError(documented("POST", "/app/push-subscriptions", badKeys)).statusCode).toBe(400);
    const anonymous = await api.post("/app/push-subscriptions", { endpoint: `${pushService.origin}/push/y`, keys });
    expect(dataError(documented("POST", "/app/push-subscriptions", anonymous)).statusCode).toBe(401);
    expect(result(await api.get("/app/push-subscriptions", {}, me.sessionToken)).subscriptions).toEqual([]);
  });

  const createLink = async (svcUserId: string) => {
    const grant = result(await api.post("/sdk/create-session", {}, partner.devSecret)).anchor_grant_token;
    return result(await api.post("/sdk/create-verification-link", { gate: "plain", svc_user_id: svcUserId }, grant));
  };

  it("pushes a request naming the person to each subscription, counted in pushed_to_devices", async () => {
    const me = await person();
    const phone = await subscribe(me.sessionToken);
    const link = await createLink(me.svcUserId);
    expect(link.pushed_to_devices).toBe(1);
    const push = await pushService.next(phone.endpoint);
    expect(push.payload).toEqual({
      kind: "request",
      id: link.request_id,
      title: "A verification request is waiting for you",
    });
    expect(push.ttl).toBe((Date.parse(link.expires_at) - start.getTime()) / 1000);
    expect(push.urgency).toBe("high");
    expect(push.httpVersion).toBe("2.0");
    expect(pushService.problems).toEqual([]);
  });

  it("a kill of account between the commit and the push service's answer loses nothing; the push comes again under one Topic", async () => {
    const me = await person();
    const phone = await subscribe(me.sessionToken);
    pushService.answerNext(phone.endpoint, "hang");
    const link = await createLink(me.svcUserId);
    const unanswered = await pushService.next(phone.endpoint);
    expect(unanswered.status).toBe(0);
    await mesh.kill("account", "SIGKILL");
    await mesh.restart("account");
    // The push was leased to the killed sender for 30 s: due again when the lease ends.
    const leaseEnded = new Date(start.getTime() + 30_000);
    mesh.setClock(leaseEnded);
    const delivered = await pushService.next(phone.endpoint);
    expect([delivered.httpVersion, delivered.status]).toEqual(["2.0", 201]);
    expect(delivered.payload).toEqual(unanswered.payload);
    expect(delivered.payload).toMatchObject({ id: link.request_id });
    expect(delivered.topic).toBe(unanswered.topic);
    const listed = result(await api.get("/app/push-subscriptions", {}, me.sessionToken)).subscriptions;
    expect(listed[0].last_pushed_at).toBe(leaseEnded.toISOString());
    expect(pushService.received.filter((r) => r.topic === delivered.topic)).toHaveLength(2);
  });
});
