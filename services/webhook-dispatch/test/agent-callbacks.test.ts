import { randomBytes, randomUUID } from "node:crypto";
import { epochSeconds, ManualClock } from "@svc/platform";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { uniqueName } from "../../../test/harness/index.ts";
import { generateEndpointSecret } from "../src/endpoints/endpoint-secret.ts";
import { startTestDispatcher, type TestDispatcher } from "./support/dispatcher.ts";
import { at, envelope, resolution } from "./support/events.ts";
import { type Receiver, startReceiver, verifyDelivery } from "./support/receiver.ts";

/** An agent's card and the events agentlink emits for it, keyed as the spec's deduplication table says. */
function agentCard(organizationId: string, agentId: string) {
  const cardId = randomUUID();
  const requestId = randomUUID();
  return {
    cardId,
    proposed: envelope(
      organizationId,
      {
        case: "agentsAskCardProposed",
        value: {
          requestId,
          cardId,
          agentId,
          agentName: "Billing Bot",
          category: "payments",
          summaryTitle: "Pay invoice 42",
          ttlAt: at("2026-11-22T10:10:00Z"),
        },
      },
      { dedupKey: `agents_ask.card.proposed:${cardId}` },
    ),
    confirmed: () => resolution(organizationId, "agentsAskResolutionConfirmed", requestId, cardId, agentId),
    denied: () => resolution(organizationId, "agentsAskResolutionDenied", requestId, cardId, agentId),
    expired: envelope(
      organizationId,
      {
        case: "agentsAskResolutionExpired",
        value: {
          requestId,
          cardId,
          outcome: "expired",
          metadata: { agentId, agentName: "Billing Bot", summaryTitle: "Pay invoice 42" },
        },
      },
      { dedupKey: `agents_ask.resolution.expired:${cardId}` },
    ),
  };
}

describe("agent callbacks", () => {
  const clock = new ManualClock(new Date());
  let dispatcher: TestDispatcher;
  const receivers: Receiver[] = [];
  const receiver = async (...args: Parameters<typeof startReceiver>) => {
    const started = await startReceiver(...args);
    receivers.push(started);
    return started;
  };
  /** An agent agentlink names a callback target for, at a new receiver. */
  const agentWithCallback = async (organizationId: string) => {
    const agentId = randomUUID();
    const callback = await receiver();
    const secret = generateEndpointSecret();
    dispatcher.agentlink.targets.set(agentId, { organizationId, url: callback.url, secret });
    return { agentId, callback, secret };
  };
  const callbackState = async (agentId: string, cardId: string) => {
    const { delivered, attempts } = await dispatcher.callbacks.getCallbackDelivery({ agentId, cardId });
    return { delivered, attempts };
  };

  beforeAll(async () => {
    dispatcher = await startTestDispatcher("wh_callbacks", { clock });
  });
  afterAll(async () => {
    await dispatcher?.stop();
    await Promise.all(receivers.map((r) => r.close()));
  });

  it("posts each resolution to the agent's callback: the partner's body and webhook-id, signed with the agent's secret", async () => {
    const organizationId = uniqueName("org");
    const partner = await receiver();
    await dispatcher.console.addEndpoint({ organizationId, url: partner.url, types: [] });
    const { agentId, callback, secret } = await agentWithCallback(organizationId);
    const expiredCard = agentCard(organizationId, agentId);
    const confirmedCard = agentCard(organizationId, agentId);
    const deniedCard = agentCard(organizationId, agentId);
    const resolutions = [expiredCard.expired, confirmedCard.confirmed(), deniedCard.denied()];
    await dispatcher.publish(expiredCard.proposed);
    for (const event of resolutions) await dispatcher.publish(event);

    await expect.poll(() => callback.requests.length, { timeout: 10_000 }).toBe(3);
    await expect.poll(() => partner.requests.length, { timeout: 10_000 }).toBe(4);
    for (const request of callback.requests) {
      const twin = partner.requests.find((r) => r.webhookId === request.webhookId);
      expect(twin?.body.equals(request.body)).toBe(true);
      expect(request.timestamp).toBe(epochSeconds(clock.now()));
      expect(verifyDelivery(secret, request, clock.now())).toEqual(JSON.parse(request.body.toString()));
    }
    // A proposal is no resolution: only the partner gets it.
    expect(callback.requests.map((r) => r.json.type).sort()).toEqual([
      "agents_ask.resolution.confirmed",
      "agents_ask.resolution.denied",
      "agents_ask.resolution.expired",
    ]);
    for (const card of [expiredCard, confirmedCard, deniedCard])
      await expect
        .poll(() => callbackState(agentId, card.cardId))
        .toEqual({
          delivered: true,
          attempts: 1,
        });
    // Another agent asking about the card reads nothing.
    expect(await callbackState(randomUUID(), expiredCard.cardId)).toEqual({
      delivered: false,
      attempts: 0,
    });

    // The partner's console sees neither the callback endpoint nor its deliveries.
    const { endpoints } = await dispatcher.console.listEndpoints({ organizationId });
    expect(endpoints.map((e) => e.url)).toEqual([partner.url]);
    const { messages } = await dispatcher.console.listMessages({ organizationId });
    expect(
      messages.every((m) => m.deliveries.length === 1 && m.deliveries[0]?.endpointId === endpoints[0]?.endpointId),
    ).toBe(true);
    // Its secret is sealed at rest, never stored readable.
    const [stored] = await dispatcher.sql<{ secret_sealed: Buffer }>(
      "select secret_sealed from endpoints where agent_id = $1",
      [agentId],
    );
    expect(stored?.secret_sealed.includes(Buffer.from(secret.slice("whsec_".length)))).toBe(false);
  });

  it("sends a resolution once, also when it is published again under another message id", async () => {
    const organizationId = uniqueName("org");
    const { agentId, callback } = await agentWithCallback(organizationId);
    const card = agentCard(organizationId, agentId);
    await dispatcher.publish(card.expired);
    await expect.poll(() => callback.requests.length, { timeout: 10_000 }).toBe(1);
    await dispatcher.publish(card.expired, `again-${randomUUID()}`);
    // A later event of the same agent passing through proves the duplicate was consumed.
    const later = agentCard(organizationId, agentId);
    await dispatcher.publish(later.expired);
    await expect.poll(() => callback.requests.length, { timeout: 10_000 }).toBe(2);
    expect(callback.requests[1]?.json.card_id).toBe(later.cardId);
    expect(await callbackState(agentId, card.cardId)).toEqual({ delivered: true, attempts: 1 });
  });

  it("sends nothing for an agent agentlink names no target for, and stops when its target goes away", async () => {
    const organizationId = uniqueName("org");
    const partner = await receiver();
    await dispatcher.console.addEndpoint({ organizationId, url: partner.url, types: [] });
    const silentAgentId = randomUUID();
    const silent = agentCard(organizationId, silentAgentId);
    await dispatcher.publish(silent.expired);
    await expect.poll(() => partner.requests.length, { timeout: 10_000 }).toBe(1);
    expect(await callbackState(silentAgentId, silent.cardId)).toEqual({ delivered: false, attempts: 0 });

    // An agent revoked (or without a URL any more): agentlink names no target, and its callback endpoint is disabled.
    const { agentId, callback } = await agentWithCallback(organizationId);
    await dispatcher.publish(agentCard(organizationId, agentId).expired);
    await expect.poll(() => callback.requests.length, { timeout: 10_000 }).toBe(1);
    dispatcher.agentlink.targets.delete(agentId);
    const afterRevoke = agentCard(organizationId, agentId);
    await dispatcher.publish(afterRevoke.expired);
    await expect.poll(() => partner.requests.length, { timeout: 10_000 }).toBe(3);
    expect(callback.requests).toHaveLength(1);
    expect(await callbackState(agentId, afterRevoke.cardId)).toEqual({
      delivered: false,
      attempts: 0,
    });
  });

  it("holds a resolution while agentlink cannot be asked, and sends it once it answers; other events go on", async () => {
    const organizationId = uniqueName("org");
    const partner = await receiver();
    await dispatcher.console.addEndpoint({ organizationId, url: partner.url, types: [] });
    const { agentId, callback } = await agentWithCallback(organizationId);
    const card = agentCard(organizationId, agentId);
    dispatcher.agentlink.failing = true;
    try {
      await dispatcher.publish(card.expired);
      await dispatcher.publish(card.proposed);
      // The proposal (no callback) is delivered; the resolution waits, for partners too.
      await expect
        .poll(() => partner.requests.map((r) => r.json.type), { timeout: 10_000 })
        .toEqual(["agents_ask.card.proposed"]);
    } finally {
      dispatcher.agentlink.failing = false;
    }
    // Redelivered after its pause (5 s of real time).
    await expect.poll(() => callback.requests.length, { timeout: 15_000 }).toBe(1);
    await expect.poll(() => partner.requests.length, { timeout: 10_000 }).toBe(2);
    // The delivery is recorded once the callback's answer is back, a moment after the receiver saw the request.
    await expect
      .poll(() => callbackState(agentId, card.cardId), { timeout: 5_000 })
      .toEqual({ delivered: true, attempts: 1 });
  });
});

describe("agent callbacks in production", () => {
  let dispatcher: TestDispatcher;
  let callback: Receiver;
  beforeAll(async () => {
    callback = await startReceiver();
    dispatcher = await startTestDispatcher("wh_callbacks_production", {
      env: { SVC_DEPLOYMENT: "production", WEBHOOK_DISPATCH_SECRET_KEY: randomBytes(32).toString("base64") },
    });
  });
  afterAll(async () => {
    await dispatcher?.stop();
    await callback?.close();
  });

  it.each([
    ["http://127.0.0.1:PORT/callback", "destination refused: production delivers only to https URLs"],
    ["https://127.0.0.1:PORT/callback", "destination refused: 127.0.0.1 is not a public address (loopback)"],
    ["https://localhost:PORT/callback", "is not a public address (loopback)"],
  ])("a callback to %s is refused by the destination guard, as a webhook endpoint's would be", async (url, reason) => {
    const organizationId = uniqueName("org");
    const agentId = randomUUID();
    dispatcher.agentlink.targets.set(agentId, {
      organizationId,
      url: url.replace("PORT", String(callback.port)),
      secret: generateEndpointSecret(),
    });
    const card = agentCard(organizationId, agentId);
    await dispatcher.publish(card.expired);
    await expect
      .poll(
        async () =>
          (
            await dispatcher.sql<{ last_error: string | null }>(
              "select d.last_error from deliveries d join messages m on m.id = d.message_id where m.card_id = $1",
              [card.cardId],
            )
          )[0]?.last_error ?? "",
        { timeout: 10_000 },
      )
      .toContain(reason);
    expect(callback.requests).toHaveLength(0);
    const state = await dispatcher.callbacks.getCallbackDelivery({ agentId, cardId: card.cardId });
    expect({ delivered: state.delivered, attempts: state.attempts }).toEqual({ delivered: false, attempts: 1 });
  });
});
