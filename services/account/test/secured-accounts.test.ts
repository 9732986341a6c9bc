import { createSecretKey } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code } from "@connectrpc/connect";
import type { MikroORM } from "@mikro-orm/postgresql";
import { createLogger, type EnvironmentName, ManualClock, OutboxEvent, openDatabase, uuid } from "@svc/platform";
import { SecuredAccountStatus } from "@svc/proto/account/v1/account_pb.js";
import { CallerSchema, CredentialKind, Environment } from "@svc/proto/common/v1/caller_pb.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { uniqueName } from "../../../test/harness/index.ts";
import { AccountLink } from "../src/links/account-link.entity.ts";
import { unlinkAccount } from "../src/links/account-links.ts";
import { migrations } from "../src/migrations/index.ts";
import { refPepper, refusal, startTestAccount, type TestAccount } from "./support/account.ts";

const clock = new ManualClock("2026-11-22T10:00:00Z");
let account: TestAccount;
let orm: MikroORM;

beforeAll(async () => {
  account = await startTestAccount("secured_accounts", { clock });
  // A person's unlink (by human) has no RPC: the test ends links with the service's own rule on its tables.
  orm = await openDatabase({
    url: account.database.url,
    schema: "account",
    entities: [OutboxEvent, AccountLink],
    migrations,
    logger: createLogger("list-test", {}, "error"),
  });
});
afterAll(async () => {
  await orm?.close();
  await account?.stop();
});

const newHuman = async () =>
  (await account.client.resolveSignedInHuman({ issuer: "https://id.example", subject: uuid() })).svcUserId;
const minutes = (n: number) => new Date(Date.parse("2026-11-01T00:00:00Z") + n * 60_000);
const environments = { development: Environment.DEVELOPMENT, production: Environment.PRODUCTION } as const;

function platform(environment: EnvironmentName = "production", organizationId = uniqueName("org")) {
  const caller = (kind = CredentialKind.SECRET_KEY) =>
    create(CallerSchema, {
      organizationId,
      environment: environments[environment],
      credentialId: uuid(),
      credentialKind: kind,
    });
  return {
    organizationId,
    secure: async (partnerUserRef: string, at: Date, surfaceId = "") =>
      (
        await account.client.secureAccount({
          organizationId,
          environment: environments[environment],
          partnerUserRef,
          svcUserId: await newHuman(),
          surfaceId,
          at: timestampFromDate(at),
        })
      ).handle,
    unlink: (
      partnerUserRef: string,
      at: Date,
      by: "human" | "platform" = "platform",
      reason: "human" | "platform" | "credential_changed" = "platform",
    ) =>
      unlinkAccount(
        {
          em: orm.em.fork(),
          clock,
          pepper: createSecretKey(Buffer.from(refPepper, "base64")),
          bus: { subject: (type) => `${account.env.SVC_EVENT_SUBJECT_PREFIX}.${type}` },
          outbox: { publishCommitted: async () => true },
          inboxes: { changed() {} },
        },
        { organizationId, environment, partnerUserRef, by, reason, at },
      ),
    list: (
      request: { partnerUserRef?: string; status?: SecuredAccountStatus; limit?: number; offset?: number } = {},
      kind?: CredentialKind,
    ) => account.client.listSecuredAccounts({ caller: caller(kind), ...request }),
  };
}

const handles = (response: { rows: { handle: string }[] }) => response.rows.map((row) => row.handle);

describe("ListSecuredAccounts", () => {
  const shop = platform("production");
  // Oldest first: a1 .. a5; a3 and a4 share one secured_at.
  const made: Record<string, string> = {};
  const surfaceId = uuid();

  beforeAll(async () => {
    made.a1 = await shop.secure("ref-1", minutes(1));
    made.a2 = await shop.secure("ref-2", minutes(2), surfaceId);
    made.a3 = await shop.secure("ref-3", minutes(3));
    made.a4 = await shop.secure("ref-4", minutes(3));
    await shop.unlink("ref-2", minutes(10), "human", "human");
    // Relinked later: a second row of the same account, active again.
    made.a5 = await shop.secure("ref-2", minutes(20));
  });

  it("lists newest first with the spec's row fields and the total; equal times keep one order across pages", async () => {
    const all = await shop.list();
    expect(all.total).toBe(5);
    expect(all.limit).toBe(25);
    const order = handles(all);
    expect(order[0]).toBe(made.a5);
    expect(order.slice(1, 3).sort()).toEqual([made.a3, made.a4].sort());
    expect(order.slice(3)).toEqual([made.a2, made.a1]);

    const unlinked = all.rows.find((row) => row.handle === made.a2)!;
    expect(unlinked).toMatchObject({
      status: SecuredAccountStatus.UNLINKED,
      unlinkedBy: "human",
      unlinkReason: "human",
      surfaceId,
    });
    expect(timestampDate(unlinked.securedAt!)).toEqual(minutes(2));
    expect(timestampDate(unlinked.unlinkedAt!)).toEqual(minutes(10));
    const active = all.rows.find((row) => row.handle === made.a1)!;
    expect(active).toMatchObject({
      status: SecuredAccountStatus.ACTIVE,
      unlinkedBy: "",
      unlinkReason: "",
      surfaceId: "",
    });
    expect(active.unlinkedAt).toBeUndefined();
    // Nothing beyond the spec's fields: no reference, no human.
    expect(
      Object.keys(active)
        .filter((k) => !k.startsWith("$"))
        .sort(),
    ).toEqual(["handle", "securedAt", "status", "surfaceId", "unlinkReason", "unlinkedBy"]);

    const pages = [];
    for (let offset = 0; offset < 6; offset += 2) {
      const page = await shop.list({ limit: 2, offset });
      expect(page).toMatchObject({ total: 5, limit: 2 });
      pages.push(...handles(page));
    }
    expect(pages).toEqual(order);
    expect(await shop.list({ limit: 2, offset: 50 })).toMatchObject({ rows: [], total: 5 });
  });

  it("filters by state and by reference (every link of the account, exact match)", async () => {
    const active = await shop.list({ status: SecuredAccountStatus.ACTIVE });
    expect(active.total).toBe(4);
    expect(handles(active)).not.toContain(made.a2);
    expect(handles(await shop.list({ status: SecuredAccountStatus.UNLINKED }))).toEqual([made.a2]);

    const byReference = await shop.list({ partnerUserRef: "ref-2" });
    expect(byReference.total).toBe(2);
    expect(handles(byReference)).toEqual([made.a5, made.a2]);
    expect(handles(await shop.list({ partnerUserRef: "ref-2", status: SecuredAccountStatus.ACTIVE }))).toEqual([
      made.a5,
    ]);
    expect(await shop.list({ partnerUserRef: "REF-2" })).toMatchObject({ rows: [], total: 0 });
    expect(await shop.list({ partnerUserRef: "ref-" })).toMatchObject({ rows: [], total: 0 });
  });

  it("shows a caller only its own organization and environment", async () => {
    const development = platform("development", shop.organizationId);
    const devHandle = await development.secure("ref-1", minutes(30));
    const otherOrg = platform("production");
    const otherHandle = await otherOrg.secure("ref-1", minutes(40));

    expect(handles(await development.list())).toEqual([devHandle]);
    expect(handles(await otherOrg.list())).toEqual([otherHandle]);
    expect(handles(await otherOrg.list({ partnerUserRef: "ref-3" }))).toEqual([]);
    const production = await shop.list({ partnerUserRef: "ref-1" });
    expect(handles(production)).toEqual([made.a1]);
    expect((await shop.list()).total).toBe(5);
  });

  it("refuses a call without a partner, another credential kind and out-of-range input", async () => {
    expect((await refusal(account.client.listSecuredAccounts({}))).code).toBe(Code.PermissionDenied);
    expect((await refusal(shop.list({}, CredentialKind.SITE_KEY))).code).toBe(Code.Unauthenticated);
    for (const request of [
      { limit: 101 },
      { limit: -1 },
      { offset: -1 },
      { partnerUserRef: "" },
      { partnerUserRef: "  " },
      { partnerUserRef: "x".repeat(513) },
      { status: 9 as SecuredAccountStatus },
    ]) {
      expect((await refusal(shop.list(request))).code, JSON.stringify(request)).toBe(Code.InvalidArgument);
    }
    expect((await shop.list({ partnerUserRef: "x".repeat(512) })).total).toBe(0);
    expect((await shop.list({ limit: 100 })).limit).toBe(100);
  });
});
