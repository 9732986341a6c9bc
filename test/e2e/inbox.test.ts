import { randomUUID } from "node:crypto";
import { fromBinary } from "@bufbuild/protobuf";
import { connectNats, countOpenInboxes, inboxChangedSubject, type NatsConnection } from "@svc/platform";
import { type InboxChanged, InboxChangedSchema } from "@svc/proto/common/v1/inbox_watch_pb.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SoftwareAuthenticator } from "../harness/software-passkey.ts";
import { runSvcctl } from "../harness/svcctl.ts";
import { startTestMesh, type TestMesh } from "../harness/test-mesh.ts";
import { svcctlJson } from "./agent-support.ts";
import { dataError, issuer, newGate, newPartner, partnerApi, result } from "./gate-support.ts";

/**
 * The person's live inbox through the gateway against the real mesh: `GET /app/inbox` as a long-poll and
 * `GET /app/inbox/events` as Server-Sent Events, both woken by the services' InboxChanged notifications; an
 * open inbox counted in create-verification-link's `pushed_to_devices`; account's notices of a partner's
 * revoke and agentlink's of a new binding, each dismissed through `/app/notices/dismiss`; its waiters freed
 * when the client goes away and when the gateway stops.
 */
const start = new Date("2026-11-24T09:00:00Z");

// biome-ignore lint/suspicious/noExplicitAny: an inbox as JSON, read by each test's assertions.
type Inbox = any;

describe("the person's inbox", () => {
  let mesh: TestMesh;
  let api: ReturnType<typeof partnerApi>;
  let partner: Awaited<ReturnType<typeof newPartner>>;
  let nc: NatsConnection;

  beforeAll(async () => {
    mesh = await startTestMesh("inbox", { only: ["signing", "account", "agentlink", "gate"], clockAt: start });
    api = partnerApi(mesh);
    partner = await newPartner(mesh, "Inbox Shop");
    await newGate(mesh, partner.organizationId, { key: "plain" });
    await newGate(mesh, partner.organizationId, { key: "login", notarizeOffer: true });
    nc = await connectNats({ url: mesh.env.SVC_NATS_URL as string, name: "inbox-test" });
  });
  afterAll(async () => {
    await nc?.close();
    await mesh?.stop();
  });

  /** A signed-in person with no registered device: only an open inbox can count as reached. */
  async function person() {
    const { sessionToken } = await mesh.console.mintDevSession({
      issuer: mesh.devIdpIssuer,
      subject: `inbox-${randomUUID()}`,
    });
    const me = result(await api.get("/app/me", {}, sessionToken));
    return { svcUserId: me.svc_user_id as string, sessionToken };
  }
  /** A pending request for the person; with `reference`, one the partner can revoke by it. */
  const createLink = async (svcUserId: string, reference?: string) => {
    const grant = result(await api.post("/sdk/create-session", {}, partner.devSecret)).anchor_grant_token;
    const input = { gate: "plain", svc_user_id: svcUserId, ...(reference && { partner_user_ref: reference }) };
    return result(await api.post("/sdk/create-verification-link", input, grant));
  };
  const revoke = async (reference: string) =>
    expect(
      result(
        await api.post("/sdk/revoke-verification", { gate: "plain", partner_user_id: reference }, partner.devSecret),
      ),
    ).toMatchObject({ revoked_count: 1 });
  const inbox = (sessionToken: string, query: Record<string, unknown> = {}) =>
    api.get("/app/inbox", query, sessionToken);
  const dismiss = (sessionToken: string, noticeId: string) =>
    api.post("/app/notices/dismiss", { notice_id: noticeId }, sessionToken);

  /** The person secures their account `reference` at the partner (notarize, confirmed with their passkey); its handle. */
  async function secure(who: { svcUserId: string; sessionToken: string }, reference: string) {
    const authenticator = SoftwareAuthenticator.create();
    const app = (path: string, body: Record<string, unknown> = {}) => api.post(`/app${path}`, body, who.sessionToken);
    const begun = result(await app("/passkeys/begin-registration"));
    result(
      await app("/passkeys/finish-registration", {
        ceremony_id: begun.ceremony_id,
        response: authenticator.register(begun.options, issuer),
      }),
    );
    const grant = result(await api.post("/sdk/create-session", {}, partner.devSecret)).anchor_grant_token;
    const link = result(
      await api.post(
        "/sdk/create-verification-link",
        { gate: "login", svc_user_id: who.svcUserId, partner_user_ref: reference, notarize: true },
        grant,
      ),
    );
    const opened = result(await app("/requests/open", { request_id: link.request_id }));
    result(
      await app("/requests/confirm", {
        request_id: link.request_id,
        ceremony_id: opened.ceremony_id,
        response: authenticator.assert(opened.options, issuer),
      }),
    );
    const { accounts } = result(await api.get("/app/secured-accounts", {}, who.sessionToken));
    expect(accounts).toHaveLength(1);
    return accounts[0].handle as string;
  }
  /** An agent of the partner bound to the person: their inbox holds its agent_bound notice. */
  async function bindAgent(sessionToken: string, name: string) {
    const registered = await svcctlJson(mesh)([
      ...["agent", "register", "--org", partner.organizationId, "--env", "development"],
      ...["--name", name, "--category", "travel"],
    ]);
    const code = result(await api.post("/agent/bind-session", {}, registered.agent_key as string)).link_code;
    result(await api.post("/app/agent-bindings/claim", { link_code: code }, sessionToken));
  }
  /** The open inbox connections of the person, as gate asks the gateways for them. */
  const openInboxes = (svcUserId: string) =>
    countOpenInboxes(nc, mesh.env.SVC_EVENT_SUBJECT_PREFIX as string, svcUserId, { stallMs: 20, maxWaitMs: 500 });

  /** `GET /app/inbox/events` read as a browser's fetch streaming would, event by event. */
  async function openEvents(sessionToken: string) {
    const abort = new AbortController();
    const response = await mesh.fetch(`${mesh.gatewayUrl}/v1/app/inbox/events`, {
      headers: { authorization: `Bearer ${sessionToken}` },
      signal: abort.signal,
    });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("text/event-stream; charset=utf-8");
    expect(response.headers.get("cache-control")).toBe("no-store");
    expect(response.headers.get("x-content-type-options")).toBe("nosniff");
    const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
    let buffered = "";
    const events: Inbox[] = [];
    let ended = false;
    const pump = (async () => {
      try {
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buffered += value;
          for (let end = buffered.indexOf("\n\n"); end >= 0; end = buffered.indexOf("\n\n")) {
            const block = buffered.slice(0, end);
            buffered = buffered.slice(end + 2);
            const data = block.split("\n").find((line) => line.startsWith("data: "));
            if (block.startsWith("event: inbox") && data) events.push(JSON.parse(data.slice("data: ".length)));
          }
        }
      } catch {
        // aborted by the test
      }
      ended = true;
    })();
    return {
      events,
      /** Until an event satisfies `check`; the events before it are skipped. */
      until: (check: (event: Inbox) => boolean) =>
        expect.poll(() => events.find(check), { timeout: 10_000, interval: 20 }).toBeDefined(),
      ended: () => ended,
      pump,
      close: () => {
        abort.abort();
        void reader.cancel().catch(() => undefined);
      },
    };
  }

  it("answers a held long-poll as soon as a gate request for the person is created", async () => {
    const alice = await person();
    const empty = result(await inbox(alice.sessionToken));
    expect(empty).toEqual({ cursor: expect.any(String), requests: [], cards: [], notices: [] });
    const started = performance.now();
    const held = inbox(alice.sessionToken, { wait_seconds: 25, cursor: empty.cursor });
    const link = await createLink(alice.svcUserId);
    const answer = result(await held);
    expect(performance.now() - started).toBeLessThan(10_000);
    expect(answer.cursor).not.toBe(empty.cursor);
    expect(answer.requests).toEqual([
      {
        request_id: link.request_id,
        platform: { name: "Inbox Shop" },
        gate_type: "human",
        notarize_offered: false,
        expires_at: link.expires_at,
      },
    ]);
  });

  // gate tells the inbox exactly which request was created or ended, and the gateway applies that to the
  // inbox it last answered instead of reading it: what it answers must be what a read gives. The mesh's
  // clock stands still, so the requests share created_at and gate orders them by request_id.
  it("answers a long-poll woken by a request created or ended exactly as a read right after does", async () => {
    const kim = await person();
    const told: InboxChanged["change"][] = [];
    const heard = nc.subscribe(inboxChangedSubject(mesh.env.SVC_EVENT_SUBJECT_PREFIX as string), {
      callback: (_error, message) => {
        const changed = fromBinary(InboxChangedSchema, message.data);
        if (changed.svcUserId === kim.svcUserId) told.push(changed.change);
      },
    });
    await nc.flush(); // subscribed at the server before gate publishes
    const links = [await createLink(kim.svcUserId, "kim-1"), await createLink(kim.svcUserId)];
    const shown = result(await inbox(kim.sessionToken));
    const whenCreated = inbox(kim.sessionToken, { wait_seconds: 25, cursor: shown.cursor });
    links.push(await createLink(kim.svcUserId));
    const created = result(await whenCreated);
    expect(created).toEqual(result(await inbox(kim.sessionToken)));
    expect(created.requests.map((r: Inbox) => r.request_id).sort()).toEqual(links.map((l) => l.request_id).sort());
    const whenEnded = inbox(kim.sessionToken, { wait_seconds: 25, cursor: created.cursor });
    await revoke("kim-1");
    const ended = result(await whenEnded);
    expect(ended).toEqual(result(await inbox(kim.sessionToken)));
    expect(ended.requests.map((r: Inbox) => r.request_id).sort()).toEqual(
      links
        .slice(1)
        .map((l) => l.request_id)
        .sort(),
    );
    // Each change was told exactly (so none of these wakes read the inbox again).
    await nc.flush();
    heard.unsubscribe();
    const toldIds = told.map((c) => [c.case, c.case === "requestPending" ? c.value.requestId : c.value]);
    expect(toldIds).toEqual([
      ...links.map((l) => ["requestPending", l.request_id]),
      ["requestEnded", links[0]?.request_id],
    ]);
  });

  it("streams requests created and ended exactly as a read right after shows them", async () => {
    const lena = await person();
    const stream = await openEvents(lena.sessionToken);
    await stream.until((event) => event.requests.length === 0);
    const links = [await createLink(lena.svcUserId, "lena-1"), await createLink(lena.svcUserId)];
    await stream.until((event) => event.requests.length === 2);
    expect(stream.events.at(-1)).toEqual(result(await inbox(lena.sessionToken)));
    await revoke("lena-1");
    // The event between the two creates also held one request, the first; only the second may remain.
    await stream.until((event) => event.requests.length === 1 && event.requests[0].request_id === links[1].request_id);
    expect(stream.events.at(-1)).toEqual(result(await inbox(lena.sessionToken)));
    expect(stream.events.at(-1).requests[0].request_id).toBe(links[1].request_id);
    stream.close();
  });

  it("answers unchanged when wait_seconds is up and nothing changed, and at once for another cursor", async () => {
    const bob = await person();
    const now = result(await inbox(bob.sessionToken));
    const started = performance.now();
    const unchanged = result(await inbox(bob.sessionToken, { wait_seconds: 1, cursor: now.cursor }));
    expect(performance.now() - started).toBeGreaterThanOrEqual(1000);
    expect(unchanged).toEqual(now);
    const stale = performance.now();
    result(await inbox(bob.sessionToken, { wait_seconds: 25, cursor: "something-else" }));
    expect(performance.now() - stale).toBeLessThan(5000);
  });

  it("streams a new request, a new binding and a new card as events, without reloading", async () => {
    const carol = await person();
    const stream = await openEvents(carol.sessionToken);
    await stream.until((event) => event.requests.length === 0);
    const link = await createLink(carol.svcUserId);
    await stream.until((event) => event.requests.some((r: Inbox) => r.request_id === link.request_id));

    const svcctl = svcctlJson(mesh);
    const registered = await svcctl([
      ...["agent", "register", "--org", partner.organizationId, "--env", "development"],
      ...["--name", "Inbox_Bot", "--category", "travel"],
    ]);
    const agentKey = registered.agent_key as string;
    const code = result(await api.post("/agent/bind-session", {}, agentKey)).link_code;
    result(await api.post("/app/agent-bindings/claim", { link_code: code }, carol.sessionToken));
    await stream.until((event) =>
      event.notices.some((n: Inbox) => n.kind === "agent_bound" && n.agent.display_name === "Inbox_Bot"),
    );
    const opaqueId = result(await api.get("/agent/check-binding", { link_code: code }, agentKey)).opaque_id;
    const requestId = randomUUID();
    const action = { summary_title: "Book a table for two", category: "travel" };
    result(await api.post("/agentlink/inquire", { request_id: requestId, opaque_id: opaqueId, action }, agentKey));
    await stream.until((event) => event.cards.some((c: Inbox) => c.request_id === requestId));
    // The card item is exactly what GET /agentlink/cards lists.
    const { cards } = result(await api.get("/agentlink/cards", {}, carol.sessionToken));
    expect(stream.events.at(-1).cards).toEqual(cards);
    stream.close();
  });

  it("shows a partner's revoke live as an account_revoked notice, and dismissing it takes it away", async () => {
    const hana = await person();
    const handle = await secure(hana, "acct-hana");
    const stream = await openEvents(hana.sessionToken);
    await stream.until((event) => event.notices.length === 0);
    const revoked = await runSvcctl(mesh, [
      ...["account", "unlink", "--org", partner.organizationId, "--env", "development", "--ref", "acct-hana"],
    ]);
    expect(revoked.code).toBe(0);
    await stream.until((event) => event.notices.length === 1);
    const [notice] = stream.events.at(-1).notices;
    expect(notice).toEqual({
      notice_id: expect.any(String),
      kind: "account_revoked",
      platform: { name: "Inbox Shop" },
      at: expect.any(String),
      handle,
    });
    // The same inbox as a long-poll, then the dismissal answers it.
    const now = result(await inbox(hana.sessionToken));
    expect(now.notices).toEqual([notice]);
    const held = inbox(hana.sessionToken, { wait_seconds: 25, cursor: now.cursor });
    expect(result(await dismiss(hana.sessionToken, notice.notice_id))).toEqual({ dismissed: true });
    expect(result(await held).notices).toEqual([]);
    await stream.until((event) => event.notices.length === 0);
    expect(dataError(await dismiss(hana.sessionToken, notice.notice_id)).statusCode).toBe(404);
    stream.close();
  });

  it("removes an agent_bound notice when the person dismisses it (through the same route), and only theirs", async () => {
    const ivan = await person();
    await bindAgent(ivan.sessionToken, "Dismissed_Bot");
    const now = result(await inbox(ivan.sessionToken));
    expect(now.notices).toEqual([
      {
        notice_id: expect.any(String),
        kind: "agent_bound",
        agent: { display_name: "Dismissed_Bot" },
        at: expect.any(String),
      },
    ]);
    const [notice] = now.notices;
    const other = await person();
    expect(dataError(await dismiss(other.sessionToken, notice.notice_id)).statusCode).toBe(404);
    expect(dataError(await dismiss(ivan.sessionToken, randomUUID())).statusCode).toBe(404);
    expect(result(await inbox(ivan.sessionToken)).notices).toEqual([notice]);
    const held = inbox(ivan.sessionToken, { wait_seconds: 25, cursor: now.cursor });
    expect(result(await dismiss(ivan.sessionToken, notice.notice_id))).toEqual({ dismissed: true });
    const answered = result(await held);
    expect(answered.notices).toEqual([]);
    // agentlink's dismissal is idempotent: again it answers the same, and the inbox stays as it is.
    expect(result(await dismiss(ivan.sessionToken, notice.notice_id))).toEqual({ dismissed: true });
    expect(result(await inbox(ivan.sessionToken))).toEqual(answered);
  });

  it("counts an open inbox in pushed_to_devices, and frees it when the client goes away", async () => {
    const dave = await person();
    expect((await createLink(dave.svcUserId)).pushed_to_devices).toBe(0);
    const stream = await openEvents(dave.sessionToken);
    await stream.until(() => true);
    expect(await openInboxes(dave.svcUserId)).toBe(1);
    const link = await createLink(dave.svcUserId);
    expect(link.pushed_to_devices).toBe(1);
    stream.close();
    await expect.poll(() => openInboxes(dave.svcUserId)).toBe(0);
    expect((await createLink(dave.svcUserId)).pushed_to_devices).toBe(0);
  });

  it("frees a held long-poll's waiter at once when its client goes away", async () => {
    const erin = await person();
    const now = result(await inbox(erin.sessionToken));
    const gone = new AbortController();
    const url = new URL(`${mesh.gatewayUrl}/v1/app/inbox`);
    url.searchParams.set("wait_seconds", "25");
    url.searchParams.set("cursor", now.cursor);
    const held = mesh.fetch(url, { headers: { authorization: `Bearer ${erin.sessionToken}` }, signal: gone.signal });
    await expect.poll(() => openInboxes(erin.svcUserId)).toBe(1);
    gone.abort();
    await expect(held).rejects.toThrow();
    await expect.poll(() => openInboxes(erin.svcUserId)).toBe(0);
  });

  it("refuses no session with 401 and wait_seconds outside 0-25 with the input error", async () => {
    for (const path of ["/app/inbox", "/app/inbox/events"]) {
      expect(dataError(await api.get(path, {})).statusCode).toBe(401);
      expect(dataError(await api.get(path, {}, "not-a-session")).statusCode).toBe(401);
    }
    const frank = await person();
    for (const wait of ["26", "-1", "x", "1.5"]) {
      const reply = await inbox(frank.sessionToken, { wait_seconds: wait, cursor: "c" });
      expect(reply.status).toBe(400);
      expect(reply.body).toMatchObject({
        code: "InputValidationError",
        errors: [expect.objectContaining({ propertyPath: "wait_seconds" })],
      });
    }
  });

  it("answers held long-polls and ends event streams when the gateway stops", async () => {
    const gina = await person();
    const now = result(await inbox(gina.sessionToken));
    const held = inbox(gina.sessionToken, { wait_seconds: 25, cursor: now.cursor });
    const stream = await openEvents(gina.sessionToken);
    await stream.until(() => true);
    await expect.poll(() => openInboxes(gina.svcUserId)).toBe(2);
    const stopping = performance.now();
    await mesh.kill("gateway", "SIGTERM");
    expect(result(await held)).toEqual(now);
    await stream.pump;
    expect(stream.ended()).toBe(true);
    expect(performance.now() - stopping).toBeLessThan(5000);
    expect(await openInboxes(gina.svcUserId)).toBe(0);
    await mesh.restart("gateway");
  });
});
