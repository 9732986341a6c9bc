import { fromBinary } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { connectNats, notificationSubject } from "@svc/platform";
import { AccountConsoleService, SandboxBehavior } from "@svc/proto/account/v1/account_pb.js";
import { Environment } from "@svc/proto/common/v1/caller_pb.js";
import { RequestChangedSchema } from "@svc/proto/gate/v1/request_watch_pb.js";
import { createRemoteJWKSet, jwtVerify } from "jose";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { SoftwareAuthenticator } from "../harness/software-passkey.ts";
import { startTestMesh, type TestMesh } from "../harness/test-mesh.ts";
import {
  dataError,
  gateConsole,
  issuer,
  newGate,
  newPartner,
  partnerApi,
  result,
  verifyIndependently,
} from "./gate-support.ts";
import { type PartnerEndpoint, startPartnerEndpoint } from "./partner-endpoint.ts";

/**
 * The person's side through the gateway: the app API with a development-IdP session and the software
 * passkey, the web flow's routes with the flow secret, sandbox humans, Age Gates, secured accounts,
 * Recent Presence, expiry with events, and every token verified with jose against the served key set.
 * Events are read where a partner reads them: signed webhooks from webhook-dispatch.
 */
const start = new Date(Date.now() + 60_000);

describe("gate ceremonies end to end", () => {
  let mesh: TestMesh;
  let api: ReturnType<typeof partnerApi>;
  let partner: Awaited<ReturnType<typeof newPartner>>;
  let endpoint: PartnerEndpoint;
  let now = start;
  const moveClock = (ms: number) => {
    now = new Date(now.getTime() + ms);
    mesh.setClock(now);
  };

  beforeAll(async () => {
    // The expiry test sweeps by ExpireRequests and counts what it expired: a timed sweep must not take them first.
    mesh = await startTestMesh("gate_ceremony", { clockAt: start, env: { GATE_SWEEP_EVERY: "1h" } });
    api = partnerApi(mesh);
    partner = await newPartner(mesh, "Ceremonies");
    endpoint = await startPartnerEndpoint(mesh, partner.organizationId);
    await newGate(mesh, partner.organizationId, { key: "login", notarizeOffer: true });
    await newGate(mesh, partner.organizationId, { key: "plain" });
    await newGate(mesh, partner.organizationId, { key: "adults", age: 18 });
  });
  afterAll(async () => {
    await mesh?.stop();
    endpoint?.close();
  });

  const accountConsole = () => createClient(AccountConsoleService, mesh.consoleTransport());
  const origin = issuer;

  /** A person with the app: a development-IdP session, a registered passkey and a phone. */
  async function person() {
    const { sessionToken } = await mesh.console.mintDevSession({
      issuer: mesh.devIdpIssuer,
      subject: `person-${crypto.randomUUID()}`,
    });
    const authenticator = SoftwareAuthenticator.create();
    const app = (path: string, body: Record<string, unknown> = {}) => api.post(`/app${path}`, body, sessionToken);
    const begun = result(await app("/passkeys/begin-registration"));
    result(
      await app("/passkeys/finish-registration", {
        ceremony_id: begun.ceremony_id,
        response: authenticator.register(begun.options, origin),
      }),
    );
    result(await app("/devices", { push_token: `push-${crypto.randomUUID()}`, platform: "ios" }));
    const me = result(await api.get("/app/me", {}, sessionToken));
    return { svcUserId: me.svc_user_id as string, authenticator, app, sessionToken };
  }

  const session = async (body: Record<string, unknown> = {}) =>
    result(await api.post("/sdk/create-session", body, partner.devSecret)).anchor_grant_token as string;
  const createLink = async (body: Record<string, unknown>, sessionBody: Record<string, unknown> = {}) =>
    result(await api.post("/sdk/create-verification-link", body, await session(sessionBody)));
  const status = async (requestId: string) =>
    result(await api.get("/verification/status", { request_id: requestId }, partner.devSecret), true);
  const secretOf = (webUrl: string) => decodeURIComponent(new URL(webUrl).hash.slice("#t=".length));
  const eventsFor = (requestId: string) => endpoint.deliveries().filter((d) => d.body.request_id === requestId);
  const waitForEvent = async (requestId: string, type: string) =>
    (await endpoint.waitFor((b) => b.request_id === requestId && b.type === type, `${type} for ${requestId}`)).body;

  /** The app's ceremony: open (assertion options bound to the request), assert with the passkey, confirm. */
  async function confirmInApp(who: Awaited<ReturnType<typeof person>>, requestId: string, t?: string) {
    const opened = result(await who.app("/requests/open", { request_id: requestId, ...(t ? { t } : {}) }));
    expect(opened.status).toBe("pending");
    return result(
      await who.app("/requests/confirm", {
        request_id: requestId,
        ceremony_id: opened.ceremony_id,
        response: who.authenticator.assert(opened.options, origin),
      }),
    );
  }

  it("a full ceremony: pushed to the person's phone, confirmed with the passkey, token and gate.human_verified", async () => {
    const alice = await person();
    const link = await createLink(
      { gate: "plain", svc_user_id: alice.svcUserId, metadata: { order: "7", scope: "dropped" } },
      { metadata: { order: "1", cart: "c" } },
    );
    expect(link).toMatchObject({ pushed_to_devices: 1, auth_mode: "linked-account", sdk_type: "signal" });
    const opened = result(await alice.app("/requests/open", { request_id: link.request_id }));
    expect(opened).toMatchObject({
      status: "pending",
      gate: "plain",
      gate_type: "human",
      organization: { id: partner.organizationId },
      notarize_offered: false,
    });
    expect(opened.options.challenge).toEqual(expect.any(String));
    const confirmed = result(
      await alice.app("/requests/confirm", {
        request_id: link.request_id,
        ceremony_id: opened.ceremony_id,
        response: alice.authenticator.assert(opened.options, origin),
      }),
    );
    expect(confirmed.status).toBe("completed");
    expect(confirmed.token).toBeUndefined();

    const record = await status(link.request_id);
    expect(record).toMatchObject({ found: true, status: "completed", trusted: false, first_time: false });
    expect(record.age_verdict).toBeUndefined();
    const claims = await verifyIndependently(mesh, record.token, now);
    expect(claims).toMatchObject({
      request_id: link.request_id,
      verified: true,
      organization_id: partner.organizationId,
      trusted: false,
    });
    expect(claims.trusted_since).toBeUndefined();
    expect(claims.age_over).toBeUndefined();

    const event = await waitForEvent(link.request_id, "gate.human_verified");
    expect(event).toMatchObject({
      event_id: link.request_id,
      verdict: "pass",
      trusted: false,
      first_time: false,
      environment: "development",
      product: "census",
      metadata: { order: "7", cart: "c" },
    });
    expect(event.handle).toBeUndefined();
    // Another person's passkey cannot answer a request pushed to Alice.
    const bob = await person();
    expect(dataError(await bob.app("/requests/open", { request_id: link.request_id })).statusCode).toBe(404);
  });

  it("the development identity provider's sessions verify against its served key set; a wrong issuer is refused", async () => {
    const { sessionToken } = await mesh.console.mintDevSession({ issuer: mesh.devIdpIssuer, subject: "jwks-check" });
    const keySet = createRemoteJWKSet(new URL(`${mesh.devIdpIssuer}/.well-known/jwks.json`));
    const { payload } = await jwtVerify(sessionToken, keySet, {
      issuer: mesh.devIdpIssuer,
      audience: "svc-app",
      currentDate: now,
    });
    expect(payload.sub).toBe("jwks-check");
    await expect(mesh.console.mintDevSession({ issuer: "https://elsewhere.example", subject: "x" })).rejects.toThrow(
      /issuer/,
    );
    expect(dataError(await api.get("/app/me", {}, `${sessionToken.slice(0, -4)}AAAA`)).statusCode).toBe(401);
  });

  it("the web flow: the flow secret opens the request, the confirm returns the token for return_url", async () => {
    const carol = await person();
    const link = await createLink({ gate: "plain", return_url: "https://shop.example/back" });
    expect(link.auth_mode).toBe("private");
    const t = secretOf(link.web_url);
    expect(
      dataError(await api.post("/flow/requests/open", { request_id: link.request_id, t: "wrong" })).statusCode,
    ).toBe(404);
    const opened = result(await api.post("/flow/requests/open", { request_id: link.request_id, t, origin }));
    const confirmed = result(
      await api.post("/flow/requests/confirm", {
        request_id: link.request_id,
        t,
        ceremony_id: opened.ceremony_id,
        response: carol.authenticator.assert(opened.options, origin),
      }),
    );
    expect(confirmed).toMatchObject({ status: "completed", return_url: "https://shop.example/back" });
    expect((await verifyIndependently(mesh, confirmed.token, now)).request_id).toBe(link.request_id);
    expect(
      dataError(
        await api.post("/flow/requests/confirm", {
          request_id: link.request_id,
          t,
          ceremony_id: opened.ceremony_id,
          response: {},
        }),
      ).statusCode,
    ).toBe(409);
  });

  it("securing an account: first time, then a conflict refused with failure_code", async () => {
    const dave = await person();
    const first = await createLink({
      gate: "login",
      svc_user_id: dave.svcUserId,
      partner_user_ref: "acct-dave",
      notarize: true,
    });
    await confirmInApp(dave, first.request_id);
    const record = await status(first.request_id);
    expect(record).toMatchObject({ status: "completed", trusted: true, first_time: true });
    const claims = await verifyIndependently(mesh, record.token, now);
    expect(claims).toMatchObject({
      trusted: true,
      trusted_since: expect.any(String),
      last_pass_at: expect.any(String),
    });
    const event = await waitForEvent(first.request_id, "gate.human_verified");
    expect(event).toMatchObject({
      trusted: true,
      first_time: true,
      handle: expect.stringMatching(/^OP_[A-Za-z0-9]{12}$/),
    });

    const erin = await person();
    const taken = await createLink({
      gate: "login",
      svc_user_id: erin.svcUserId,
      partner_user_ref: "acct-dave",
      notarize: true,
    });
    expect((await confirmInApp(erin, taken.request_id)).status).toBe("failed");
    expect(await status(taken.request_id)).toMatchObject({ status: "failed", reason: "rebind_requires_prior_id" });
    const refused = await waitForEvent(taken.request_id, "gate.unavailable");
    expect(refused).toMatchObject({
      reason: "internal_error",
      failure_code: "rebind_requires_prior_id",
      failure_name: "account_held_by_another_id",
      failed_at: expect.any(String),
    });
    expect(refused.expired_at).toBeUndefined();
  });

  it("a confirmation retried after signing was down still reports the link it created as first_time", async () => {
    const gail = await person();
    const link = await createLink({
      gate: "login",
      svc_user_id: gail.svcUserId,
      partner_user_ref: "acct-gail",
      notarize: true,
    });
    await mesh.kill("signing");
    try {
      const opened = result(await gail.app("/requests/open", { request_id: link.request_id }));
      const refused = await gail.app("/requests/confirm", {
        request_id: link.request_id,
        ceremony_id: opened.ceremony_id,
        response: gail.authenticator.assert(opened.options, origin),
      });
      expect(dataError(refused).statusCode).toBeGreaterThanOrEqual(500);
      expect((await status(link.request_id)).status).toBe("pending");
    } finally {
      await mesh.restart("signing");
    }
    expect((await confirmInApp(gail, link.request_id)).status).toBe("completed");
    expect(await status(link.request_id)).toMatchObject({ status: "completed", trusted: true, first_time: true });
    expect(await waitForEvent(link.request_id, "gate.human_verified")).toMatchObject({
      trusted: true,
      first_time: true,
    });
  });

  it("decline and reported failures fail the request with their reason; one terminal event each", async () => {
    const frank = await person();
    const declined = await createLink({ gate: "plain", svc_user_id: frank.svcUserId });
    expect(result(await frank.app("/requests/decline", { request_id: declined.request_id })).status).toBe("failed");
    expect(await status(declined.request_id)).toMatchObject({ status: "failed", reason: "unavailable" });
    expect(await waitForEvent(declined.request_id, "gate.unavailable")).toMatchObject({
      reason: "user_denied",
      verdict: "unavailable",
    });

    const locked = await createLink({ gate: "plain" });
    const t = secretOf(locked.web_url);
    expect(
      result(
        await api.post("/flow/requests/fail", { request_id: locked.request_id, t, reason: "device_lock_required" }),
      ).status,
    ).toBe("failed");
    expect(await waitForEvent(locked.request_id, "gate.unavailable")).toMatchObject({ reason: "device_lock_required" });
    expect(result(await api.post("/flow/requests/decline", { request_id: locked.request_id, t })).status).toBe(
      "failed",
    );
    expect(dataError(await frank.app("/requests/open", { request_id: `req_${"1".repeat(32)}` })).statusCode).toBe(404);
  });

  it("a passkey that answers without user verification fails the request with device_lock_required; the page cannot say otherwise", async () => {
    const grace = await person();
    const link = await createLink({ gate: "plain", svc_user_id: grace.svcUserId });
    const opened = result(await grace.app("/requests/open", { request_id: link.request_id }));
    const confirmed = result(
      await grace.app("/requests/confirm", {
        request_id: link.request_id,
        ceremony_id: opened.ceremony_id,
        response: grace.authenticator.assert(opened.options, origin, { userVerified: false }),
      }),
    );
    expect(confirmed).toEqual({ status: "failed" });
    // A page reporting another reason afterwards changes nothing: the request already ended.
    expect(
      result(await grace.app("/requests/fail", { request_id: link.request_id, reason: "platform_declined" })).status,
    ).toBe("failed");
    expect(await status(link.request_id)).toMatchObject({ found: true, status: "failed", reason: "unavailable" });
    const event = await waitForEvent(link.request_id, "gate.unavailable");
    expect(event).toMatchObject({
      verdict: "unavailable",
      reason: "device_lock_required",
      failed_at: expect.any(String),
    });
    expect(event.failure_code).toBeUndefined();
    expect(eventsFor(link.request_id).map((d) => d.body.type)).toEqual(["gate.unavailable"]);

    // The same person's verified assertion on a new request still passes: only the unverified answer failed.
    const next = await createLink({ gate: "plain", svc_user_id: grace.svcUserId });
    expect((await confirmInApp(grace, next.request_id)).status).toBe("completed");
  });

  it("sandbox humans answer through the same path: confirm with age evidence, decline, silence", async () => {
    const sandbox = async (behavior: SandboxBehavior, age?: number) =>
      (
        await accountConsole().createSandboxHuman({
          environment: Environment.DEVELOPMENT,
          behavior,
          ...(age === undefined ? {} : { age }),
        })
      ).svcUserId;
    const waitForStatus = (requestId: string, wanted: string) =>
      vi.waitFor(
        async () => {
          const record = await status(requestId);
          if (record.status !== wanted) throw new Error(`still ${record.status}`);
          return record;
        },
        { timeout: 15_000, interval: 100 },
      );

    const cases = [
      { age: 20, verdict: "over", claim: true },
      { age: 12, verdict: "under", claim: false },
      { age: undefined, verdict: "unavailable", claim: null },
    ];
    for (const c of cases) {
      const human = await sandbox(SandboxBehavior.CONFIRM, c.age);
      const link = await createLink({ gate: "adults", svc_user_id: human });
      expect(link).toMatchObject({ gate_type: "age", age_threshold: 18 });
      const record = await waitForStatus(link.request_id, "completed");
      expect(record.age_verdict).toBe(c.verdict);
      expect((await verifyIndependently(mesh, record.token, now)).age_over).toBe(c.claim);
      // An Age Gate sends gate.human_verified even when the age is unavailable, without the age.
      expect((await waitForEvent(link.request_id, "gate.human_verified")).age_verdict).toBeUndefined();
      // No Recent Presence on an Age Gate: a returning human's age is read again, never skipped.
      const again = await createLink({ gate: "adults", svc_user_id: human });
      expect(again.sdk_type).toBe("signal");
      expect((await waitForStatus(again.request_id, "completed")).age_verdict).toBe(c.verdict);
    }
    const declined = await createLink({ gate: "plain", svc_user_id: await sandbox(SandboxBehavior.DECLINE) });
    await waitForStatus(declined.request_id, "failed");
    const silent = await createLink({ gate: "plain", svc_user_id: await sandbox(SandboxBehavior.SILENT) });
    expect((await status(silent.request_id)).status).toBe("pending");
  });

  it("Recent Presence: a returning human passes at once with token null, and the pass reads expired after 60 s", async () => {
    const gina = await person();
    const first = await createLink({ gate: "plain", svc_user_id: gina.svcUserId, partner_user_ref: "gina-ref" });
    await confirmInApp(gina, first.request_id);
    const byRef = await createLink({ gate: "plain", partner_user_ref: "gina-ref" });
    expect(byRef).toMatchObject({
      sdk_type: "presence",
      pushed_to_devices: 0,
      expires_at: new Date(now.getTime() + 60_000).toISOString(),
    });
    expect(await status(byRef.request_id)).toMatchObject({ found: true, status: "pass", token: null });
    const byId = await createLink({ gate: "plain", svc_user_id: gina.svcUserId });
    expect((await status(byId.request_id)).status).toBe("pass");
    const otherGate = await createLink({ gate: "login", partner_user_ref: "gina-ref" });
    expect((await status(otherGate.request_id)).status).toBe("pending");
    moveClock(60_000);
    expect((await status(byRef.request_id)).status).toBe("expired");
    // A pre-check's presence ceremony replaces its pending pre-check instead of conflicting with it, and
    // the status long-polls held for the pre-check are woken as for any other end.
    const preCheck = await createLink({ gate: "login", partner_user_ref: "henry-ref" });
    const nc = await connectNats({ url: mesh.env.SVC_NATS_URL as string, name: "gate-ceremony-test" });
    const told: { requestId: string; status: string }[] = [];
    nc.subscribe(notificationSubject(mesh.env.SVC_EVENT_SUBJECT_PREFIX as string, "gate.request_changed"), {
      callback: (_error, message) => {
        told.push(fromBinary(RequestChangedSchema, message.data));
      },
    });
    await nc.flush(); // subscribed at the server before gate publishes
    const ceremony = await createLink({
      gate: "login",
      partner_user_ref: "henry-ref",
      parent_request_id: preCheck.request_id,
    });
    expect(ceremony.sdk_type).toBe("presence");
    expect((await status(preCheck.request_id)).status).toBe("expired");
    await nc.flush();
    await nc.close();
    expect(told.map(({ requestId, status }) => ({ requestId, status }))).toEqual([
      { requestId: preCheck.request_id, status: "expired" },
    ]);
  });

  it("expiry: unopened sends nothing; opened late or left open sends gate.unavailable with expired_at", async () => {
    const ivan = await person();
    const unopened = await createLink({ gate: "plain" });
    const openedLate = await createLink({ gate: "plain", svc_user_id: ivan.svcUserId });
    const leftOpen = await createLink({ gate: "plain" });
    result(
      await api.post("/flow/requests/open", { request_id: leftOpen.request_id, t: secretOf(leftOpen.web_url), origin }),
    );
    moveClock(301_000);
    expect((await gateConsole(mesh).expireRequests({ limit: 1000 })).expiredCount).toBeGreaterThanOrEqual(3);
    const leftEvent = await waitForEvent(leftOpen.request_id, "gate.unavailable");
    expect(leftEvent).toMatchObject({ expired_at: leftOpen.expires_at, verdict: "unavailable" });
    expect(leftEvent.reason).toBeUndefined();
    expect(leftEvent.failed_at).toBeUndefined();

    expect(result(await ivan.app("/requests/open", { request_id: openedLate.request_id })).status).toBe("expired");
    expect(await waitForEvent(openedLate.request_id, "gate.unavailable")).toMatchObject({
      expired_at: openedLate.expires_at,
    });
    result(await ivan.app("/requests/open", { request_id: openedLate.request_id }));
    expect(eventsFor(openedLate.request_id)).toHaveLength(1);
    expect(eventsFor(unopened.request_id)).toHaveLength(0);
    expect((await status(unopened.request_id)).status).toBe("expired");
  });
});
