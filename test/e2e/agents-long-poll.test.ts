import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestMesh, type TestMesh } from "../harness/test-mesh.ts";
import { agentBoundToSilentHuman, svcctlJson } from "./agent-support.ts";
import { dataError, partnerApi, type Reply, result } from "./gate-support.ts";

/**
 * The long-poll of `GET /agentlink/check-status` through the gateway against the real mesh: a held wait
 * answers as soon as its card leaves queued (woken by agentlink's NATS notification after a cancel or the
 * expire sweep), answers queued when wait_seconds is up, counts as one in_flight request, and is answered
 * at once when the gateway stops.
 */
const start = new Date("2026-11-24T09:00:00Z");

describe("agents ask: the check-status long-poll", () => {
  let mesh: TestMesh;
  let api: ReturnType<typeof partnerApi>;
  let agentKey: string;
  let opaqueId: string;

  const json = (args: string[]) => svcctlJson(mesh)(args);
  const inquire = async (ttlSeconds = 600): Promise<string> => {
    const requestId = randomUUID();
    const action = { summary_title: "Book a table for two", category: "travel" };
    const body = { request_id: requestId, opaque_id: opaqueId, action, ttl_seconds: ttlSeconds };
    result(await api.post("/agentlink/inquire", body, agentKey));
    return requestId;
  };
  const checkStatus = (query: Record<string, unknown>, headers?: Record<string, string>) =>
    api.get("/agentlink/check-status", query, agentKey, headers);

  /**
   * Until `count` long-polls of the agent are held: they hold in_flight slots, seen beside this request's
   * own in the `_rateLimit` report. A wait takes its slot just before it reads its card, so a change made
   * after this still happens after the wait registered (and a change before the read is read anyway).
   */
  const untilHeld = (requestId: string, count: number) =>
    expect
      .poll(async () => {
        const reply = await checkStatus({ request_id: requestId }, { "x-svc-include-ratelimit": "true" });
        const inFlight = reply.body._rateLimit.buckets.in_flight;
        return inFlight.limit - inFlight.remaining - 1;
      })
      .toBe(count);

  beforeAll(async () => {
    // The sweep test counts what `svcctl agent sweep` expired: agentlink's timed sweep must not take the card first.
    mesh = await startTestMesh("agents_long_poll", {
      only: ["signing", "account", "agentlink"],
      clockAt: start,
      env: { AGENTLINK_SWEEP_EVERY: "1h" },
    });
    api = partnerApi(mesh);
    ({ agentKey, opaqueId } = await agentBoundToSilentHuman(mesh, api, {
      organization: "Waiters",
      name: "Wait_Bot",
      categories: ["travel"],
    }));
  });
  afterAll(async () => {
    await mesh?.stop();
  });

  it("answers a held long-poll as soon as its card is cancelled, before a 1-second wait started later ends", async () => {
    mesh.setClock(start);
    const requestId = await inquire();
    const held = checkStatus({ request_id: requestId, wait_seconds: 25 });
    await untilHeld(requestId, 1);
    const { cancelled_at } = result(await api.post("/agentlink/cancel", { request_id: requestId }, agentKey));
    // Without the notification the held wait would answer cancelled too, but only at its end (25 s): a
    // second long-poll of 1 second, started after the cancel, shows which came first.
    const later = checkStatus({ request_id: await inquire(), wait_seconds: 1 });
    const first = await Promise.race([held.then(() => "held"), later.then(() => "later")]);
    expect(first).toBe("held");
    expect(result(await held)).toMatchObject({ status: "cancelled", resolved_at: cancelled_at });
    expect(result(await later).status).toBe("queued");
  });

  it("answers every long-poll held for a card when the expire sweep expires it", async () => {
    mesh.setClock(start);
    const requestId = await inquire(60);
    const held = [1, 2].map(() => checkStatus({ request_id: requestId, wait_seconds: 25 }));
    await untilHeld(requestId, 2);
    const ttlAt = new Date(start.getTime() + 60_000);
    mesh.setClock(ttlAt);
    expect((await json(["agent", "sweep", "--limit", "1000"])).expired_count).toBeGreaterThanOrEqual(1);
    const later = checkStatus({ request_id: await inquire(), wait_seconds: 1 });
    const first = await Promise.race([Promise.all(held).then(() => "held"), later.then(() => "later")]);
    expect(first).toBe("held");
    for (const reply of await Promise.all(held))
      expect(result(reply)).toMatchObject({ status: "expired", resolved_at: ttlAt.toISOString() });
    await later;
    mesh.setClock(start);
  });

  it("answers queued when wait_seconds is up and the card is still queued", async () => {
    mesh.setClock(start);
    const requestId = await inquire();
    expect(result(await checkStatus({ request_id: requestId, wait_seconds: 1 }))).toEqual({
      status: "queued",
      ttl_at: new Date(start.getTime() + 600_000).toISOString(),
      resolved_at: null,
      ceremony_id: null,
      resolution_jwt: null,
      verdict: null,
      delivered: false,
      callback_attempts: 0,
    });
  });

  it("answers a card no longer queued, or none, at once whatever wait_seconds says", async () => {
    mesh.setClock(start);
    const requestId = await inquire();
    result(await api.post("/agentlink/cancel", { request_id: requestId }, agentKey));
    // Nothing will wake these: held, they would run past the test's own timeout.
    const [cancelled, unknown] = await Promise.all([
      checkStatus({ request_id: requestId, wait_seconds: 25 }),
      checkStatus({ request_id: randomUUID(), wait_seconds: 25 }),
    ]);
    expect(result(cancelled).status).toBe("cancelled");
    expect(dataError(unknown).statusCode).toBe(404);
  });

  it("refuses wait_seconds outside 0-25 or not a whole number with the input error", async () => {
    const requestId = await inquire();
    for (const wait of ["26", "-1", "x", "1.5"]) {
      const reply = await checkStatus({ request_id: requestId, wait_seconds: wait });
      expect(reply.status).toBe(400);
      expect(reply.body).toMatchObject({
        code: "InputValidationError",
        message: expect.any(String),
        errors: [expect.objectContaining({ propertyPath: "wait_seconds", message: expect.any(String) })],
      });
    }
  });

  it("answers held long-polls with the card's status when the gateway stops, and closes", async () => {
    mesh.setClock(start);
    const requestId = await inquire();
    const held = [1, 2].map(() => checkStatus({ request_id: requestId, wait_seconds: 25 }));
    await untilHeld(requestId, 2);
    await mesh.kill("gateway", "SIGTERM");
    for (const reply of await Promise.all(held)) expect(result(reply).status).toBe("queued");
    await mesh.restart("gateway");
  });

  it("answers a held long-poll with the error envelope when the gateway stops and agentlink is gone", async () => {
    mesh.setClock(start);
    const requestId = await inquire();
    const held: Promise<Reply> = checkStatus({ request_id: requestId, wait_seconds: 25 });
    await untilHeld(requestId, 1);
    await mesh.kill("agentlink");
    await mesh.kill("gateway", "SIGTERM");
    // The release reads the card again: agentlink unreachable is 502; a read still under way when the
    // gateway's own clients close is cancelled (500). Either way an answer in the envelope, not a hang.
    expect([500, 502]).toContain(dataError(await held).statusCode);
    await mesh.restart("agentlink");
    await mesh.restart("gateway");
  });
});
