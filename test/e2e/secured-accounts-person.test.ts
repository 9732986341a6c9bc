import { createClient } from "@connectrpc/connect";
import { createInternalClient } from "@svc/platform";
import { AccountService, NoticeKind } from "@svc/proto/account/v1/account_pb.js";
import { WebhookConsoleService } from "@svc/proto/webhook/v1/webhook_pb.js";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { SoftwareAuthenticator } from "../harness/software-passkey.ts";
import { runSvcctl } from "../harness/svcctl.ts";
import { startTestMesh, type TestMesh } from "../harness/test-mesh.ts";
import { dataError, issuer, newGate, newPartner, partnerApi, result } from "./gate-support.ts";
import { type PartnerEndpoint, startPartnerEndpoint } from "./partner-endpoint.ts";

/**
 * The spec's "Secured account" state table, every row, through the gateway: a person with the app (a
 * development-IdP session and a software passkey) secures accounts at a partner's gate, unlinks one,
 * is notified of the partner's revokes, relinks, and deletes their account. The partner reads
 * account.secured / account.unlinked where it would: signed webhooks at its own endpoint, checked
 * with standardwebhooks and deduplicated on webhook-id.
 */
const start = new Date(Date.now() + 60_000);

describe("the person's secured accounts end to end", () => {
  let mesh: TestMesh;
  let api: ReturnType<typeof partnerApi>;
  let partner: Awaited<ReturnType<typeof newPartner>>;
  let endpoint: PartnerEndpoint;
  let now = start;
  const moveClock = (ms: number) => {
    now = new Date(now.getTime() + ms);
    mesh.setClock(now);
  };
  const platformName = "Person Side Shop";

  beforeAll(async () => {
    mesh = await startTestMesh("secured_accounts_person", { clockAt: start });
    api = partnerApi(mesh);
    partner = await newPartner(mesh, platformName);
    endpoint = await startPartnerEndpoint(mesh, partner.organizationId, [
      "account.secured",
      "account.unlinked",
      "gate.human_verified",
      "gate.unavailable",
    ]);
    await newGate(mesh, partner.organizationId, { key: "login", notarizeOffer: true });
  });
  afterAll(async () => {
    await mesh?.stop();
    endpoint?.close();
  });

  const origin = issuer;
  const account = () => createInternalClient(AccountService, mesh.urls.account!);

  /** A person with the app: a development-IdP session, a registered passkey. */
  async function person() {
    const { sessionToken } = await mesh.console.mintDevSession({
      issuer: mesh.devIdpIssuer,
      subject: `person-${crypto.randomUUID()}`,
    });
    const authenticator = SoftwareAuthenticator.create();
    const app = (path: string, body: Record<string, unknown> = {}) => api.post(`/app${path}`, body, sessionToken);
    const read = (path: string) => api.get(`/app${path}`, {}, sessionToken);
    const begun = result(await app("/passkeys/begin-registration"));
    result(
      await app("/passkeys/finish-registration", {
        ceremony_id: begun.ceremony_id,
        response: authenticator.register(begun.options, origin),
      }),
    );
    const me = result(await read("/me"));
    return { svcUserId: me.svc_user_id as string, authenticator, app, read, sessionToken };
  }
  type Person = Awaited<ReturnType<typeof person>>;

  const status = async (requestId: string) =>
    result(await api.get("/verification/status", { request_id: requestId }, partner.devSecret), true);

  /** The partner asks the person to secure `reference` (notarize), and the person confirms in the app. */
  async function secure(who: Person, reference: string) {
    const grant = result(await api.post("/sdk/create-session", {}, partner.devSecret)).anchor_grant_token as string;
    const link = result(
      await api.post(
        "/sdk/create-verification-link",
        { gate: "login", svc_user_id: who.svcUserId, partner_user_ref: reference, notarize: true },
        grant,
      ),
    );
    const opened = result(await who.app("/requests/open", { request_id: link.request_id }));
    result(
      await who.app("/requests/confirm", {
        request_id: link.request_id,
        ceremony_id: opened.ceremony_id,
        response: who.authenticator.assert(opened.options, origin),
      }),
    );
    const record = await status(link.request_id);
    if (!record.trusted) return { requestId: link.request_id as string, record };
    // The status record never names the account; the handle comes with gate.human_verified.
    const verified = await waitForDelivery((b) => b.type === "gate.human_verified" && b.request_id === link.request_id);
    return { requestId: link.request_id as string, record: { ...record, handle: verified.body.handle as string } };
  }

  const waitForDelivery = (match: (body: Record<string, unknown>) => boolean) => endpoint.waitFor(match);
  const deliveredFor = (handle: string, type: string) =>
    endpoint.deliveries().filter((d) => d.body.handle === handle && d.body.type === type);
  const partnerRow = async (reference: string) =>
    result(await api.get("/secured-accounts/list", { platform_user_ref: reference }, partner.devSecret)).rows;
  const revoke = (reference: string) =>
    runSvcctl(mesh, ["account", "unlink", "--org", partner.organizationId, "--env", "development", "--ref", reference]);
  /** The partner's server reports a changed sign-in detail of its user. */
  const reportChange = async (reference: string) =>
    result(
      await api.post("/secured-accounts/report-credential-change", { platform_user_ref: reference }, partner.devSecret),
    );

  it("(none) → active: the confirmation secures the account, account.secured reaches the partner signed; a later pass is not first time", async () => {
    const alice = await person();
    const { record } = await secure(alice, "acct-alice");
    expect(record).toMatchObject({ status: "completed", trusted: true, first_time: true });
    const secured = await waitForDelivery((b) => b.type === "account.secured" && b.handle === record.handle);
    expect(secured.body).toEqual({
      type: "account.secured",
      handle: record.handle,
      secured_at: expect.any(String),
      surface_id: null,
    });

    moveClock(60_000);
    const later = await secure(alice, "acct-alice");
    expect(later.record).toMatchObject({ trusted: true, first_time: false, handle: record.handle });

    const listed = result(await alice.read("/secured-accounts")).accounts;
    expect(listed).toEqual([
      {
        handle: record.handle,
        platform: { name: platformName },
        status: "active",
        secured_at: expect.any(String),
        unlinked_at: null,
        unlinked_by: null,
        unlink_reason: null,
      },
    ]);
    // The redelivery of a message carries the same webhook-id, so the partner keeps one.
    const before = endpoint.attempts();
    await createClient(WebhookConsoleService, mesh.consoleTransport()).replayMessage({
      organizationId: partner.organizationId,
      messageId: secured.id,
      endpointId: endpoint.endpointId,
    });
    await vi.waitFor(() => expect(endpoint.attempts()).toBe(before + 1), { timeout: 15_000, interval: 100 });
    expect(deliveredFor(record.handle, "account.secured")).toHaveLength(1);
  });

  it("both conflicts are refused with failure_code: rebind_requires_prior_id and already_trusted", async () => {
    const [holder, other] = [await person(), await person()];
    await secure(holder, "acct-held");
    const taken = await secure(other, "acct-held");
    expect(taken.record).toMatchObject({ status: "failed", reason: "rebind_requires_prior_id" });
    expect((await waitForDelivery((b) => b.request_id === taken.requestId)).body).toMatchObject({
      type: "gate.unavailable",
      failure_code: "rebind_requires_prior_id",
      failure_name: "account_held_by_another_id",
    });
    const second = await secure(holder, "acct-second");
    expect(second.record).toMatchObject({ status: "failed", reason: "already_trusted" });
    expect((await waitForDelivery((b) => b.request_id === second.requestId)).body).toMatchObject({
      failure_code: "already_trusted",
      failure_name: "account_already_secured_here",
    });
  });

  it("active → unlinked by the person: account.unlinked by human once; a repeat is already_unlinked; relinking keeps the handle", async () => {
    const bob = await person();
    const { record } = await secure(bob, "acct-bob");
    moveClock(60_000);
    const ended = result(await bob.app("/secured-accounts/unlink", { handle: record.handle }));
    expect(ended).toEqual({
      handle: record.handle,
      status: "unlinked",
      unlinked_at: now.toISOString(),
      already_unlinked: false,
    });
    const unlinked = await waitForDelivery((b) => b.type === "account.unlinked" && b.handle === record.handle);
    expect(unlinked.body).toEqual({
      type: "account.unlinked",
      handle: record.handle,
      by: "human",
      reason: "human",
      unlinked_at: now.toISOString(),
      surface_id: null,
    });
    moveClock(1000);
    expect(result(await bob.app("/secured-accounts/unlink", { handle: record.handle }))).toMatchObject({
      already_unlinked: true,
      unlinked_at: unlinked.body.unlinked_at,
    });
    expect(await partnerRow("acct-bob")).toEqual([
      expect.objectContaining({
        handle: record.handle,
        status: "unlinked",
        unlinked_by: "human",
        unlink_reason: "human",
      }),
    ]);
    expect(result(await bob.read("/secured-accounts")).accounts[0]).toMatchObject({
      status: "unlinked",
      unlinked_by: "human",
      unlink_reason: "human",
    });

    // unlinked → active: first time again, a new account.secured, the same handle.
    moveClock(60_000);
    const relinked = await secure(bob, "acct-bob");
    expect(relinked.record).toMatchObject({ trusted: true, first_time: true, handle: record.handle });
    await vi.waitFor(() => expect(deliveredFor(record.handle, "account.secured")).toHaveLength(2), {
      timeout: 15_000,
      interval: 100,
    });
    expect(deliveredFor(record.handle, "account.unlinked")).toHaveLength(1);
  });

  it("the unlink route refuses a malformed handle (400), another person's or an unknown one (404)", async () => {
    const [carol, dan] = [await person(), await person()];
    const { record } = await secure(carol, "acct-carol");
    expect(dataError(await dan.app("/secured-accounts/unlink", { handle: record.handle })).statusCode).toBe(404);
    expect(dataError(await carol.app("/secured-accounts/unlink", { handle: "OP_000000000000" })).statusCode).toBe(404);
    expect((await carol.app("/secured-accounts/unlink", { handle: "nope" })).status).toBe(400);
    expect((await carol.app("/secured-accounts/unlink", {})).status).toBe(400);
    expect((await partnerRow("acct-carol"))[0]).toMatchObject({ status: "active" });
    expect(dataError(await api.get("/app/secured-accounts", {})).statusCode).toBe(401);
  });

  it("partner revokes → notice account_revoked; credential_changed → relink_offer, withdrawn by the relink", async () => {
    const erin = await person();
    const { record } = await secure(erin, "acct-erin");
    moveClock(60_000);
    expect((await revoke("acct-erin")).code).toBe(0);
    const revoked = await waitForDelivery((b) => b.type === "account.unlinked" && b.handle === record.handle);
    expect(revoked.body).toMatchObject({ by: "platform", reason: "platform" });
    const notices = async () => (await account().listNotices({ svcUserId: erin.svcUserId })).notices;
    expect(await notices()).toEqual([
      expect.objectContaining({
        kind: NoticeKind.ACCOUNT_REVOKED,
        organizationId: partner.organizationId,
        handle: record.handle,
      }),
    ]);

    moveClock(60_000);
    const relinked = await secure(erin, "acct-erin");
    expect(relinked.record).toMatchObject({ first_time: true, handle: record.handle });
    moveClock(60_000);
    expect(await reportChange("acct-erin")).toEqual({ unlinked: true, handle: record.handle });
    await vi.waitFor(
      () =>
        expect(deliveredFor(record.handle, "account.unlinked").map((d) => d.body.reason)).toEqual([
          "platform",
          "credential_changed",
        ]),
      { timeout: 15_000, interval: 100 },
    );
    const offered = await notices();
    expect(offered.map((n) => n.kind)).toEqual([NoticeKind.RELINK_OFFER, NoticeKind.ACCOUNT_REVOKED]);

    moveClock(60_000);
    const again = await secure(erin, "acct-erin");
    expect(again.record).toMatchObject({ first_time: true, handle: record.handle });
    expect((await notices()).map((n) => n.kind)).toEqual([NoticeKind.ACCOUNT_REVOKED]);

    const [left] = await notices();
    const other = await person();
    expect(dataError(await other.app("/notices/dismiss", { notice_id: left!.noticeId })).statusCode).toBe(404);
    expect((await erin.app("/notices/dismiss", { notice_id: "n-1" })).status).toBe(400);
    expect(result(await erin.app("/notices/dismiss", { notice_id: left!.noticeId }))).toEqual({ dismissed: true });
    expect(await notices()).toEqual([]);
    expect(dataError(await erin.app("/notices/dismiss", { notice_id: left!.noticeId })).statusCode).toBe(404);
  });

  it("passkeys: listed, removed by their owner only", async () => {
    const [fay, gus] = [await person(), await person()];
    const { passkeys } = result(await fay.read("/passkeys"));
    expect(passkeys).toEqual([
      {
        passkey_id: expect.any(String),
        created_at: now.toISOString(),
        last_used_at: null,
        transports: expect.any(Array),
      },
    ]);
    const passkeyId = passkeys[0].passkey_id as string;
    expect(dataError(await gus.app("/passkeys/remove", { passkey_id: passkeyId })).statusCode).toBe(404);
    expect((await fay.app("/passkeys/remove", {})).status).toBe(400);
    expect(result(await fay.app("/passkeys/remove", { passkey_id: passkeyId }))).toEqual({ removed: true });
    expect(result(await fay.read("/passkeys")).passkeys).toEqual([]);
    expect(dataError(await fay.app("/passkeys/remove", { passkey_id: passkeyId })).statusCode).toBe(404);
  });

  it("active → unlinked by deleting the account: every link ends by human, the person and their bindings are gone; a repeat answers the same", async () => {
    const hal = await person();
    const { record } = await secure(hal, "acct-hal");
    expect((await hal.app("/account/delete", { confirm: "delete my accounts" })).status).toBe(400);
    expect((await hal.app("/account/delete", {})).status).toBe(400);
    expect((await partnerRow("acct-hal"))[0]).toMatchObject({ status: "active" });

    moveClock(60_000);
    expect(result(await hal.app("/account/delete", { confirm: "delete my account" }))).toEqual({ deleted: true });
    const unlinked = await waitForDelivery((b) => b.type === "account.unlinked" && b.handle === record.handle);
    expect(unlinked.body).toMatchObject({ by: "human", reason: "human", unlinked_at: now.toISOString() });
    // The partner still lists the link, unlinked, and still finds it by its own reference.
    expect(await partnerRow("acct-hal")).toEqual([
      expect.objectContaining({ handle: record.handle, status: "unlinked", unlinked_by: "human" }),
    ]);
    await expect(account().getHuman({ svcUserId: hal.svcUserId })).rejects.toThrow(/no human/);

    // The same session signs in a new, empty person; deleting again deletes that one, and nothing of the first.
    moveClock(1000);
    expect(result(await hal.app("/account/delete", { confirm: "delete my account" }))).toEqual({ deleted: true });
    expect(deliveredFor(record.handle, "account.unlinked")).toHaveLength(1);
    expect(result(await hal.read("/secured-accounts")).accounts).toEqual([]);
  });
});
