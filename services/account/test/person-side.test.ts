import { create, fromBinary } from "@bufbuild/protobuf";
import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code } from "@connectrpc/connect";
import { connectNats, inboxChangedSubject, ManualClock, type NatsConnection, uuid } from "@svc/platform";
import { NoticeKind, SandboxBehavior, SecuredAccountStatus } from "@svc/proto/account/v1/account_pb.js";
import { CallerSchema, CredentialKind, Environment } from "@svc/proto/common/v1/caller_pb.js";
import { InboxChangedSchema } from "@svc/proto/common/v1/inbox_watch_pb.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { natsUrl, uniqueName } from "../../../test/harness/index.ts";
import { refusal, startTestAccount, type TestAccount } from "./support/account.ts";

const clock = new ManualClock("2026-11-22T10:00:00Z");
let account: TestAccount;
let nc: NatsConnection;
/** The svc_user_ids of the InboxChanged wake-ups account published, in order. */
const inboxWakes: string[] = [];

beforeAll(async () => {
  account = await startTestAccount("account_person_side", { clock });
  nc = await connectNats({ url: natsUrl(), name: "account-person-side-test" });
  nc.subscribe(inboxChangedSubject(account.env.SVC_EVENT_SUBJECT_PREFIX as string), {
    callback: (error, message) => {
      if (!error) inboxWakes.push(fromBinary(InboxChangedSchema, message.data).svcUserId);
    },
  });
  await nc.flush();
});
afterAll(async () => {
  await nc?.close();
  await account?.stop();
});

const environment = Environment.DEVELOPMENT;
const newHuman = async () =>
  (await account.client.resolveSignedInHuman({ issuer: "https://id.example", subject: uuid() })).svcUserId;
const sandboxHuman = async () =>
  (await account.console.createSandboxHuman({ environment, behavior: SandboxBehavior.CONFIRM, age: 30 })).svcUserId;

function platform() {
  const organizationId = uniqueName("org");
  return {
    organizationId,
    secure: async (partnerUserRef: string, svcUserId: string) =>
      account.client.secureAccount({
        organizationId,
        environment,
        partnerUserRef,
        svcUserId,
        surfaceId: "",
        at: timestampFromDate(clock.now()),
      }),
    revoke: (partnerUserRef: string) => account.console.unlinkAccount({ organizationId, environment, partnerUserRef }),
    /** The partner's server reports a changed sign-in detail (a secret API key's caller, unless another kind is named). */
    reportChange: (partnerUserRef: string, credentialKind = CredentialKind.SECRET_KEY) =>
      account.client.reportCredentialChange({
        caller: create(CallerSchema, { organizationId, environment, credentialId: uuid(), credentialKind }),
        partnerUserRef,
      }),
    rows: () =>
      account.sql<{ handle: string; status: string; unlinked_by: string | null; unlink_reason: string | null }>(
        "select handle, status, unlinked_by, unlink_reason from account_link where organization_id = $1 order by secured_at",
        [organizationId],
      ),
  };
}

/** account.unlinked events of a platform in the outbox (published rows are kept for days). */
const unlinkedEvents = async (organizationId: string) =>
  (
    await account.sql<{ n: string }>(
      "select count(*) as n from outbox where subject like '%.account.unlinked' and position(convert_to($1, 'UTF8') in payload) > 0",
      [organizationId],
    )
  )[0]!.n;

describe("the person's own links", () => {
  it("lists them newest first, naming the partner, active and unlinked", async () => {
    const human = await newHuman();
    const [older, newer] = [platform(), platform()];
    const first = await older.secure("user-1", human);
    clock.advance(60_000);
    await newer.secure("user-2", human);
    await older.revoke("user-1");
    const { accounts } = await account.client.listOwnAccounts({ svcUserId: human });
    expect(accounts.map((a) => [a.organizationId, a.status, a.unlinkedBy, a.unlinkReason])).toEqual([
      [newer.organizationId, SecuredAccountStatus.ACTIVE, "", ""],
      [older.organizationId, SecuredAccountStatus.UNLINKED, "platform", "platform"],
    ]);
    expect(accounts[1]).toMatchObject({ handle: first.handle, environment });
    expect(accounts[0]!.unlinkedAt).toBeUndefined();
    expect((await refusal(account.client.listOwnAccounts({ svcUserId: uuid() }))).code).toBe(Code.NotFound);
  });

  it("the person unlinks one: by human, reason human, account.unlinked once; a repeat is already_unlinked", async () => {
    const human = await newHuman();
    const shop = platform();
    const { handle } = await shop.secure("user-1", human);
    clock.advance(1000);
    const unlinkedAt = clock.now();
    const ended = await account.client.unlinkOwnAccount({ svcUserId: human, handle });
    expect(ended).toMatchObject({ handle, alreadyUnlinked: false });
    expect(timestampDate(ended.unlinkedAt!)).toEqual(unlinkedAt);
    clock.advance(1000);
    const again = await account.client.unlinkOwnAccount({ svcUserId: human, handle });
    expect(again).toMatchObject({ handle, alreadyUnlinked: true });
    expect(timestampDate(again.unlinkedAt!)).toEqual(unlinkedAt);
    expect(await shop.rows()).toEqual([{ handle, status: "unlinked", unlinked_by: "human", unlink_reason: "human" }]);
    expect(await unlinkedEvents(shop.organizationId)).toBe("1");
    // The person is not notified of their own unlink.
    expect((await account.client.listNotices({ svcUserId: human })).notices).toEqual([]);
  });

  it("refuses another person's handle, an unknown one and bad input, changing nothing", async () => {
    const [holder, other] = [await newHuman(), await newHuman()];
    const shop = platform();
    const { handle } = await shop.secure("user-1", holder);
    for (const [request, code] of [
      [{ svcUserId: other, handle }, Code.NotFound],
      [{ svcUserId: holder, handle: "OP_000000000000" }, Code.NotFound],
      [{ svcUserId: holder, handle: "" }, Code.InvalidArgument],
      [{ svcUserId: "me", handle }, Code.InvalidArgument],
    ] as const)
      expect((await refusal(account.client.unlinkOwnAccount(request))).code).toBe(code);
    expect(await shop.rows()).toEqual([{ handle, status: "active", unlinked_by: null, unlink_reason: null }]);
  });
});

describe("reporting a changed sign-in detail", () => {
  it("ends the reference's active link by platform, reason credential_changed, once; a retry answers unlinked false", async () => {
    const human = await newHuman();
    const [shop, other] = [platform(), platform()];
    const { handle } = await shop.secure("user-1", human);
    const untouched = await other.secure("user-1", await newHuman());
    clock.advance(60_000);
    expect(await shop.reportChange("user-1")).toMatchObject({ unlinked: true, handle });
    expect(await shop.rows()).toEqual([
      { handle, status: "unlinked", unlinked_by: "platform", unlink_reason: "credential_changed" },
    ]);
    expect(await shop.reportChange("user-1")).toMatchObject({ unlinked: false, handle: "" });
    expect(await shop.reportChange("user-unknown")).toMatchObject({ unlinked: false, handle: "" });
    expect(await unlinkedEvents(shop.organizationId)).toBe("1");
    expect((await account.client.listNotices({ svcUserId: human })).notices.map((n) => n.kind)).toEqual([
      NoticeKind.RELINK_OFFER,
    ]);
    expect(await other.rows()).toEqual([
      { handle: untouched.handle, status: "active", unlinked_by: null, unlink_reason: null },
    ]);
  });

  it("takes a secret API key's caller only, and the console's revoke can no longer choose the reason", async () => {
    const shop = platform();
    const { handle } = await shop.secure("user-1", await newHuman());
    for (const kind of [CredentialKind.SITE_KEY, CredentialKind.AGENT_KEY, CredentialKind.GRANT_TOKEN])
      expect((await refusal(shop.reportChange("user-1", kind))).code).toBe(Code.Unauthenticated);
    expect((await refusal(account.client.reportCredentialChange({ partnerUserRef: "user-1" }))).code).toBe(
      Code.PermissionDenied,
    );
    for (const partnerUserRef of ["", "x".repeat(513)])
      expect((await refusal(shop.reportChange(partnerUserRef))).code).toBe(Code.InvalidArgument);
    const consoleRevoke = await refusal(
      account.console.unlinkAccount({
        organizationId: shop.organizationId,
        environment,
        partnerUserRef: "user-1",
        credentialChanged: true,
      }),
    );
    expect(consoleRevoke.code).toBe(Code.InvalidArgument);
    expect(consoleRevoke.rawMessage).toContain("report-credential-change");
    expect(await shop.rows()).toEqual([{ handle, status: "active", unlinked_by: null, unlink_reason: null }]);
    expect(await shop.revoke("user-1")).toMatchObject({ handle, reason: "platform" });
    expect(await shop.rows()).toEqual([
      { handle, status: "unlinked", unlinked_by: "platform", unlink_reason: "platform" },
    ]);
  });
});

describe("notices", () => {
  it("a partner's revoke leaves account_revoked; credential_changed a relink_offer, which the relink withdraws", async () => {
    const human = await newHuman();
    const [revoking, changed] = [platform(), platform()];
    const revoked = await revoking.secure("user-1", human);
    const offered = await changed.secure("user-9", human);
    clock.advance(60_000);
    await revoking.revoke("user-1");
    clock.advance(60_000);
    await changed.reportChange("user-9");
    const { notices } = await account.client.listNotices({ svcUserId: human });
    expect(notices.map((n) => [n.kind, n.organizationId, n.handle, n.environment])).toEqual([
      [NoticeKind.RELINK_OFFER, changed.organizationId, offered.handle, environment],
      [NoticeKind.ACCOUNT_REVOKED, revoking.organizationId, revoked.handle, environment],
    ]);
    expect(timestampDate(notices[0]!.at!)).toEqual(clock.now());

    const relinked = await changed.secure("user-9", human);
    expect(relinked).toMatchObject({ firstTime: true, handle: offered.handle });
    expect((await account.client.listNotices({ svcUserId: human })).notices.map((n) => n.kind)).toEqual([
      NoticeKind.ACCOUNT_REVOKED,
    ]);
  });

  it("dismisses only the person's own notice", async () => {
    const [human, other] = [await newHuman(), await newHuman()];
    const shop = platform();
    await shop.secure("user-1", human);
    await shop.revoke("user-1");
    const [notice] = (await account.client.listNotices({ svcUserId: human })).notices;
    const refused = await refusal(account.client.dismissNotice({ svcUserId: other, noticeId: notice!.noticeId }));
    expect(refused.code).toBe(Code.NotFound);
    expect((await refusal(account.client.dismissNotice({ svcUserId: human, noticeId: "n-1" }))).code).toBe(
      Code.InvalidArgument,
    );
    await account.client.dismissNotice({ svcUserId: human, noticeId: notice!.noticeId });
    expect((await account.client.listNotices({ svcUserId: human })).notices).toEqual([]);
    const repeat = await refusal(account.client.dismissNotice({ svcUserId: human, noticeId: notice!.noticeId }));
    expect(repeat.code).toBe(Code.NotFound);
  });
});

describe("the person's inbox", () => {
  /** How many wake-ups of `svcUserId` account published. */
  const wakes = (svcUserId: string) => inboxWakes.filter((id) => id === svcUserId).length;
  /** Lets any wake-up published so far arrive (a round trip to the NATS server after it). */
  const settled = () => nc.flush();

  it("is woken after each commit that changes the person's links or notices, and not by a refusal", async () => {
    const [human, other] = [await newHuman(), await newHuman()];
    const shop = platform();
    await shop.secure("user-1", human);
    await expect.poll(() => wakes(human)).toBe(1);
    await shop.secure("user-1", human); // a later pass changes nothing
    await settled();
    expect(wakes(human)).toBe(1);
    await shop.revoke("user-1"); // a notice
    await expect.poll(() => wakes(human)).toBe(2);
    const [notice] = (await account.client.listNotices({ svcUserId: human })).notices;
    await refusal(account.client.dismissNotice({ svcUserId: other, noticeId: notice!.noticeId }));
    await account.client.dismissNotice({ svcUserId: human, noticeId: notice!.noticeId });
    await expect.poll(() => wakes(human)).toBe(3);
    const { handle } = await shop.secure("user-1", human);
    await expect.poll(() => wakes(human)).toBe(4);
    await account.client.unlinkOwnAccount({ svcUserId: human, handle });
    await expect.poll(() => wakes(human)).toBe(5);
    await account.client.unlinkOwnAccount({ svcUserId: human, handle }); // already unlinked
    await settled();
    expect(wakes(human)).toBe(5);
    expect(wakes(other)).toBe(0);
  });
});

describe("passkeys", () => {
  it("lists the person's passkeys and removes one only for its owner", async () => {
    const [human, other] = [await sandboxHuman(), await sandboxHuman()];
    const { passkeys } = await account.client.listPasskeys({ svcUserId: human });
    expect(passkeys).toHaveLength(1);
    const passkeyId = passkeys[0]!.passkeyId;
    expect(passkeys[0]!.lastUsedAt).toBeUndefined();
    expect((await refusal(account.client.removePasskey({ svcUserId: other, passkeyId }))).code).toBe(Code.NotFound);
    expect((await refusal(account.client.removePasskey({ svcUserId: human, passkeyId: "" }))).code).toBe(
      Code.InvalidArgument,
    );
    await account.client.removePasskey({ svcUserId: human, passkeyId });
    expect((await account.client.listPasskeys({ svcUserId: human })).passkeys).toEqual([]);
    expect((await account.client.listPasskeys({ svcUserId: other })).passkeys).toHaveLength(1);
    const [sealed] = await account.sql<{ n: string }>(
      "select count(*) as n from sandbox_passkey where credential_id = $1",
      [passkeyId],
    );
    expect(sealed!.n).toBe("0");
    expect((await refusal(account.client.removePasskey({ svcUserId: human, passkeyId }))).code).toBe(Code.NotFound);
  });
});

describe("deleting a person", () => {
  it("ends every active link by human and erases every row that leads to the person; a repeat changes nothing", async () => {
    const human = await sandboxHuman();
    const bystander = await sandboxHuman();
    const [active, revoked, other] = [platform(), platform(), platform()];
    const activeLink = await active.secure("user-a", human);
    await revoked.secure("user-r", human);
    await revoked.reportChange("user-r");
    await other.secure("user-b", bystander);
    await account.client.registerDevice({ svcUserId: human, pushToken: `token-${uuid()}`, platform: "ios" });
    await account.client.beginPasskeyAssertion({
      svcUserId: human,
      rpId: "app.example",
      origin: "https://app.example",
      binding: "gate-request:req_1",
    });

    clock.advance(60_000);
    expect(await account.client.deleteHuman({ svcUserId: human })).toMatchObject({
      linksUnlinked: 1,
      alreadyDeleted: false,
    });
    expect(await active.rows()).toEqual([
      { handle: activeLink.handle, status: "unlinked", unlinked_by: "human", unlink_reason: "human" },
    ]);
    expect(await unlinkedEvents(active.organizationId)).toBe("1");

    // What the spec requires to be kept: the link rows, for the partner's list (handle, state, times,
    // who and why, surface) and its platform_user_ref filter (the keyed hash of the partner's own
    // reference), and the events the partner is sent (outbox, pruned once published). The handle, the
    // one value derived from the person's id, stays only there. Nothing else of the person, anywhere.
    const needles = [human, human.replace(/-/g, "")].map((text) => Buffer.from(text));
    const handle = Buffer.from(activeLink.handle);
    const tables = await account.sql<{ table_name: string }>(
      "select table_name from information_schema.tables where table_schema = 'account' and table_type = 'BASE TABLE'",
    );
    expect(tables.map((t) => t.table_name)).toEqual(
      expect.arrayContaining([
        "human",
        "sign_in_identity",
        "passkey",
        "passkey_ceremony",
        "sandbox_passkey",
        "device",
        "age_evidence",
        "account_link",
        "notice",
        "outbox",
      ]),
    );
    for (const { table_name } of tables) {
      for (const row of await account.sql<Record<string, unknown>>(`select * from "${table_name}"`)) {
        for (const value of Object.values(row)) {
          const bytes = Buffer.isBuffer(value) ? value : Buffer.from(JSON.stringify(value) ?? "");
          for (const needle of needles)
            expect(bytes.includes(needle), `${table_name} still leads to the person`).toBe(false);
          if (!["account_link", "outbox"].includes(table_name))
            expect(bytes.includes(handle), `${table_name} holds the handle`).toBe(false);
        }
      }
    }
    expect(
      (await account.sql("select 1 from account_link where organization_id = $1", [revoked.organizationId])).length,
    ).toBe(1);
    expect((await refusal(account.client.getHuman({ svcUserId: human }))).code).toBe(Code.NotFound);
    // The bystander keeps everything.
    expect(await account.client.getHuman({ svcUserId: bystander })).toMatchObject({ passkeyCount: 1, deviceCount: 1 });
    expect((await account.client.listOwnAccounts({ svcUserId: bystander })).accounts).toHaveLength(1);

    clock.advance(60_000);
    expect(await account.client.deleteHuman({ svcUserId: human })).toMatchObject({
      linksUnlinked: 0,
      alreadyDeleted: true,
    });
    expect(await unlinkedEvents(active.organizationId)).toBe("1");
    expect((await refusal(account.client.deleteHuman({ svcUserId: "someone" }))).code).toBe(Code.InvalidArgument);
  });

  it("a new sign-in of the deleted person's identity is a new human, with a new handle", async () => {
    const subject = uuid();
    const first = (await account.client.resolveSignedInHuman({ issuer: "https://id.example", subject })).svcUserId;
    const shop = platform();
    const before = await shop.secure("user-1", first);
    await account.client.deleteHuman({ svcUserId: first });
    const again = await account.client.resolveSignedInHuman({ issuer: "https://id.example", subject });
    expect(again).toMatchObject({ created: true });
    expect(again.svcUserId).not.toBe(first);
    const after = await shop.secure("user-1", again.svcUserId);
    expect(after.firstTime).toBe(true);
    expect(after.handle).not.toBe(before.handle);
  });
});
