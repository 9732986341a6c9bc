import { randomUUID } from "node:crypto";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { runSvcctl } from "../harness/svcctl.ts";
import { startTestMesh, type TestMesh } from "../harness/test-mesh.ts";
import { partnerApi, result } from "./gate-support.ts";

/**
 * Agent callbacks through the real mesh: an agent registered with a callback URL gets each resolution of its
 * cards POSTed there by webhook-dispatch, signed with its own callback secret (checked with standardwebhooks),
 * retried on the webhook schedule (driven by the shared clock), and check-status reports `delivered` and
 * `callback_attempts`. Resolutions come from the expire sweep (svcctl agent sweep).
 */
const start = new Date("2026-11-24T09:00:00Z");
const ttlSeconds = 60;

interface Received {
  headers: IncomingHttpHeaders;
  body: Buffer;
}

/** A receiver on 127.0.0.1 that records each POST and answers with the next status of its script (then 204). */
async function startReceiver(statuses: number[] = []) {
  const requests: Received[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      requests.push({ headers: req.headers, body: Buffer.concat(chunks) });
      res.writeHead(statuses.shift() ?? 204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/callback`,
    requests,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** Verified as an agent would, with standardwebhooks, its timestamp tolerance read at the mesh's time. */
function verify(secret: string, request: Received, now: Date): unknown {
  const spy = vi.spyOn(Date, "now").mockReturnValue(now.getTime());
  try {
    return new Webhook(secret).verify(request.body, request.headers as Record<string, string>);
  } finally {
    spy.mockRestore();
  }
}

describe("agents ask: callbacks", () => {
  let mesh: TestMesh;
  let api: ReturnType<typeof partnerApi>;
  let organizationId: string;
  let person: string;
  let partner: Awaited<ReturnType<typeof startReceiver>>;
  const receivers: { close(): Promise<void> }[] = [];
  let now = start;

  const json = async (args: string[]): Promise<Record<string, string>> => {
    const { code, stdout, stderr } = await runSvcctl(mesh, args);
    if (code !== 0) throw new Error(stderr);
    return JSON.parse(stdout);
  };
  const setClock = (at: Date) => {
    now = at;
    mesh.setClock(at);
  };

  /** An agent bound to the sandbox human, with a callback URL when given. */
  async function agent(callbackUrl?: string) {
    const registered = await json([
      ...["agent", "register", "--org", organizationId, "--env", "development"],
      ...["--name", `Bot_${randomUUID().slice(0, 8)}`, "--category", "payments"],
      ...(callbackUrl ? ["--callback-url", callbackUrl] : []),
    ]);
    const key = registered.agent_key as string;
    const code = result(await api.post("/agent/bind-session", {}, key)).link_code;
    await json(["human", "claim", "--human", person, "--code", code]);
    const opaqueId = result(await api.get("/agent/check-binding", { link_code: code }, key)).opaque_id;
    return { agentId: registered.agent_id as string, key, secret: registered.callback_secret, opaqueId };
  }

  /** Inquires, then expires the card: the clock past ttl_at and the sweep, as agentlink would every minute. */
  async function expiredCard(of: { key: string; opaqueId: string }) {
    setClock(start);
    const requestId = randomUUID();
    const { card_id } = result(
      await api.post(
        "/agentlink/inquire",
        {
          request_id: requestId,
          opaque_id: of.opaqueId,
          ttl_seconds: ttlSeconds,
          action: { summary_title: "Pay invoice 2231 to Acme", category: "payments" },
        },
        of.key,
      ),
    );
    setClock(new Date(start.getTime() + ttlSeconds * 1000));
    expect(await json(["agent", "sweep"])).toEqual({ expired_count: 1 });
    return { requestId, cardId: card_id as string };
  }

  const checkStatus = async (key: string, requestId: string) =>
    result(await api.get("/agentlink/check-status", { request_id: requestId }, key));
  const callbackOf = async (key: string, requestId: string) => {
    const { delivered, callback_attempts } = await checkStatus(key, requestId);
    return { delivered, callback_attempts };
  };
  /** The partner's webhook of the card: proof that webhook-dispatch has stored its event. */
  const partnerGot = (cardId: string) => partner.requests.find((r) => JSON.parse(r.body.toString()).card_id === cardId);

  beforeAll(async () => {
    mesh = await startTestMesh("agents_callbacks", {
      only: ["signing", "account", "agentlink", "webhook-dispatch"],
      clockAt: start,
      // The test runs the expire sweep by hand and counts what it expired: agentlink's own must not run first.
      env: { AGENTLINK_SWEEP_EVERY: "1h" },
    });
    api = partnerApi(mesh);
    organizationId = (await mesh.console.createOrganization({ name: "Callbacks Inc" })).organizationId;
    person = (await json(["human", "create", "--env", "development", "--behavior", "silent"])).svc_user_id as string;
    partner = await startReceiver();
    receivers.push(partner);
    await json([
      "webhook",
      "add",
      "--org",
      organizationId,
      "--url",
      partner.url,
      "--type",
      "agents_ask.resolution.expired",
    ]);
  });
  afterAll(async () => {
    await mesh?.stop();
    await Promise.all(receivers.map((r) => r.close()));
  });

  it("POSTs the expiry to the agent's callback URL, signed with its callback secret; check-status reports it delivered", async () => {
    const callback = await startReceiver();
    receivers.push(callback);
    const bot = await agent(callback.url);
    expect(bot.secret).toMatch(/^whsec_/);
    const { requestId, cardId } = await expiredCard(bot);

    await expect.poll(() => callback.requests.length, { timeout: 15_000 }).toBe(1);
    const [request] = callback.requests;
    const payload = verify(bot.secret as string, request!, now);
    expect(payload).toEqual({
      type: "agents_ask.resolution.expired",
      request_id: requestId,
      card_id: cardId,
      outcome: "expired",
      metadata: { agent_id: bot.agentId, agent_name: expect.any(String), summary_title: "Pay invoice 2231 to Acme" },
    });
    // The partner's webhook of the same event: the same body and webhook-id, under the endpoint's own secret.
    await expect.poll(() => partnerGot(cardId) !== undefined, { timeout: 15_000 }).toBe(true);
    expect(partnerGot(cardId)?.body.equals(request!.body)).toBe(true);
    expect(partnerGot(cardId)?.headers["webhook-id"]).toBe(request!.headers["webhook-id"]);
    // Another secret does not verify it.
    expect(() => verify(`whsec_${Buffer.alloc(32, 1).toString("base64")}`, request!, now)).toThrow();

    await expect
      .poll(() => callbackOf(bot.key, requestId), { timeout: 10_000 })
      .toEqual({
        delivered: true,
        callback_attempts: 1,
      });
    expect(await checkStatus(bot.key, requestId)).toMatchObject({ status: "expired" });
  });

  it("retries a callback that answered 500 on the webhook schedule, counting the attempts", async () => {
    const callback = await startReceiver([500]);
    receivers.push(callback);
    const bot = await agent(callback.url);
    const { requestId } = await expiredCard(bot);

    await expect.poll(() => callback.requests.length, { timeout: 15_000 }).toBe(1);
    await expect
      .poll(() => callbackOf(bot.key, requestId), { timeout: 10_000 })
      .toEqual({
        delivered: false,
        callback_attempts: 1,
      });
    // The schedule's second attempt is 5 s (±20 %) later: due once the clock is past it.
    setClock(new Date(now.getTime() + 10_000));
    await expect.poll(() => callback.requests.length, { timeout: 15_000 }).toBe(2);
    const [first, second] = callback.requests;
    expect(second!.headers["webhook-id"]).toBe(first!.headers["webhook-id"]);
    expect(Number(second!.headers["webhook-timestamp"])).toBeGreaterThan(Number(first!.headers["webhook-timestamp"]));
    expect(verify(bot.secret as string, second!, now)).toMatchObject({ type: "agents_ask.resolution.expired" });
    await expect
      .poll(() => callbackOf(bot.key, requestId), { timeout: 10_000 })
      .toEqual({
        delivered: true,
        callback_attempts: 2,
      });
  });

  it("sends nothing for an agent without a callback URL: not delivered, no attempts", async () => {
    const bot = await agent();
    expect(bot.secret).toBeUndefined();
    const { requestId, cardId } = await expiredCard(bot);
    // Once the partner has the event, webhook-dispatch has decided about the callback too.
    await expect.poll(() => partnerGot(cardId) !== undefined, { timeout: 15_000 }).toBe(true);
    expect(await callbackOf(bot.key, requestId)).toEqual({ delivered: false, callback_attempts: 0 });
  });

  it("keeps the internal callback services off the gateway's public and console ports", async () => {
    const callback = await startReceiver();
    receivers.push(callback);
    const bot = await agent(callback.url);
    for (const origin of [mesh.gatewayUrl, mesh.consoleUrl]) {
      for (const [path, body] of [
        ["/svc.agentlink.v1.AgentCallbackService/GetCallbackTarget", { agentId: bot.agentId }],
        ["/svc.webhook.v1.WebhookCallbackService/GetCallbackDelivery", { agentId: bot.agentId, cardId: randomUUID() }],
      ] as const) {
        const reply = await fetch(`${origin}${path}`, {
          method: "POST",
          // With the operator credential, so the console's refusal is that it serves no such service.
          headers: { "content-type": "application/json", authorization: `Bearer ${mesh.consoleToken}` },
          body: JSON.stringify(body),
        });
        expect(reply.status, `${origin}${path}`).toBe(404);
        expect(await reply.text()).not.toContain("whsec_");
      }
    }
  });

  it("answers check-status while webhook-dispatch is down, reading the callback as not delivered", async () => {
    const callback = await startReceiver();
    receivers.push(callback);
    const bot = await agent(callback.url);
    const { requestId } = await expiredCard(bot);
    await expect
      .poll(() => callbackOf(bot.key, requestId), { timeout: 15_000 })
      .toEqual({
        delivered: true,
        callback_attempts: 1,
      });
    await mesh.kill("webhook-dispatch", "SIGKILL");
    try {
      expect(await checkStatus(bot.key, requestId)).toMatchObject({
        status: "expired",
        delivered: false,
        callback_attempts: 0,
      });
    } finally {
      await mesh.restart("webhook-dispatch");
    }
    expect(await callbackOf(bot.key, requestId)).toEqual({ delivered: true, callback_attempts: 1 });
  });
});
