import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { createClient } from "@connectrpc/connect";
import { createInternalClient } from "@svc/platform";
import { AccountConsoleService, AccountService, SandboxBehavior } from "@svc/proto/account/v1/account_pb.js";
import { Environment } from "@svc/proto/common/v1/caller_pb.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestMesh, type TestMesh } from "../harness/test-mesh.ts";
import { newPartner, partnerApi, result } from "./gate-support.ts";

/**
 * The secured-accounts list as a partner grows: `total` (kept as counts per platform and status, not
 * counted on each call) stays exact through every kind of link change, and keyset paging (`cursor`,
 * beyond the spec) reads every row once, in order, while links are being added. Links are made through
 * the account service's own RPC (what the gate calls after a confirmation), so a test can make dozens.
 */
const start = new Date("2031-03-01T10:00:00.000Z");

interface Row {
  handle: string;
  status: string;
  secured_at: string;
}

describe("secured accounts list: counts and cursor paging", () => {
  let mesh: TestMesh;
  let api: ReturnType<typeof partnerApi>;
  let partner: Awaited<ReturnType<typeof newPartner>>;
  let account: ReturnType<typeof createClient<typeof AccountService>>;
  let accountConsole: ReturnType<typeof createClient<typeof AccountConsoleService>>;

  const list = (query: Record<string, unknown> = {}) => api.get("/secured-accounts/list", query, partner.devSecret);

  async function newHuman(): Promise<string> {
    const { svcUserId } = await accountConsole.createSandboxHuman({
      environment: Environment.DEVELOPMENT,
      behavior: SandboxBehavior.CONFIRM,
    });
    return svcUserId;
  }

  async function secure(reference: string, svcUserId: string, at: Date) {
    const secured = await account.secureAccount({
      organizationId: partner.organizationId,
      environment: Environment.DEVELOPMENT,
      partnerUserRef: reference,
      svcUserId,
      at: timestampFromDate(at),
    });
    expect(secured.handle).toMatch(/^OP_/);
    return secured.handle;
  }

  /** Every row, read with offset paging, which counts nothing: what `total` must agree with. */
  async function everyRow(query: Record<string, unknown> = {}): Promise<Row[]> {
    const rows: Row[] = [];
    for (let offset = 0; ; offset += 100) {
      const page = result(await list({ ...query, limit: 100, offset }));
      rows.push(...page.rows);
      if (page.rows.length < 100) return rows;
    }
  }

  async function expectExactTotals() {
    const rows = await everyRow();
    const active = rows.filter((row) => row.status === "active").length;
    expect(result(await list()).total).toBe(rows.length);
    expect(result(await list({ status: "active" })).total).toBe(active);
    expect(result(await list({ status: "unlinked" })).total).toBe(rows.length - active);
    return { all: rows.length, active };
  }

  beforeAll(async () => {
    mesh = await startTestMesh("secured_paging", { only: ["signing", "account"], clockAt: start });
    api = partnerApi(mesh);
    partner = await newPartner(mesh, "Growing platform");
    account = createInternalClient(AccountService, mesh.urls.account as string);
    accountConsole = createClient(AccountConsoleService, mesh.consoleTransport());
  });
  afterAll(async () => {
    await mesh?.stop();
  });

  it("keeps total exact across secure, unlink by the platform and the person, relink and deleting the person", async () => {
    const people = await Promise.all([newHuman(), newHuman(), newHuman(), newHuman()]);
    const at = (minute: number) => new Date(start.getTime() + minute * 60_000);
    const handles = await Promise.all(people.map((person, i) => secure(`count-${i}`, person, at(i))));
    expect(await expectExactTotals()).toEqual({ all: 4, active: 4 });

    await accountConsole.unlinkAccount({
      organizationId: partner.organizationId,
      environment: Environment.DEVELOPMENT,
      partnerUserRef: "count-0",
    });
    expect(await expectExactTotals()).toEqual({ all: 4, active: 3 });

    // A repeated unlink changes nothing, and neither does it change the count.
    await account.unlinkOwnAccount({ svcUserId: people[1], handle: handles[1] });
    await account.unlinkOwnAccount({ svcUserId: people[1], handle: handles[1] });
    expect(await expectExactTotals()).toEqual({ all: 4, active: 2 });

    // Relinking is a new link row: the old one stays unlinked.
    await secure("count-0", people[0] as string, at(10));
    expect(await expectExactTotals()).toEqual({ all: 5, active: 3 });

    // Securing an account already secured by the same person is no change.
    await secure("count-2", people[2] as string, at(11));
    expect(await expectExactTotals()).toEqual({ all: 5, active: 3 });

    await account.deleteHuman({ svcUserId: people[2] });
    await account.deleteHuman({ svcUserId: people[3] });
    expect(await expectExactTotals()).toEqual({ all: 5, active: 1 });
  });

  it("reads every row once, newest first, page by page with the cursor while links are added", async () => {
    // A fresh partner, so this test owns every row it pages through.
    partner = await newPartner(mesh, "Cursor platform");
    const base = new Date(start.getTime() + 3_600_000);
    const people = await Promise.all(Array.from({ length: 13 }, () => newHuman()));
    // Three links share one instant, so the order within it (the row id) must hold across pages too.
    for (const [i, person] of people.entries())
      await secure(`cursor-${i}`, person, new Date(base.getTime() + Math.max(i, 3) * 1000));
    await account.unlinkOwnAccount({
      svcUserId: people[5],
      handle: (await everyRow()).find((row) => row.secured_at === new Date(base.getTime() + 5000).toISOString())
        ?.handle as string,
    });
    const before = await everyRow();
    expect(before).toHaveLength(13);

    const seen: Row[] = [];
    let page = result(await list({ limit: 5 }));
    expect(page.total).toBe(13);
    seen.push(...page.rows);
    let added = 0;
    while (page.next_cursor !== null) {
      // A newer link arrives between pages: it sorts before the cursor, so no row moves into a later page.
      const newcomer = await newHuman();
      await secure(`newcomer-${added}`, newcomer, new Date(base.getTime() + 60_000 + added * 1000));
      added += 1;
      page = result(await list({ limit: 5, cursor: page.next_cursor }));
      expect(page.offset).toBe(0);
      seen.push(...page.rows);
    }
    expect(added).toBe(2);
    expect(page.total).toBe(15);
    expect(seen.map((row) => row.handle)).toEqual(before.map((row) => row.handle));

    const active = await everyRow({ status: "active" });
    const activeByCursor: Row[] = [];
    let cursor: string | undefined;
    do {
      const next = result(await list({ status: "active", limit: 4, ...(cursor && { cursor }) }));
      activeByCursor.push(...next.rows);
      cursor = next.next_cursor ?? undefined;
    } while (cursor !== undefined);
    expect(activeByCursor).toEqual(active);
    expect(activeByCursor.every((row) => row.status === "active")).toBe(true);
  });

  it("answers a large offset correctly: the last row, then an empty page with the total", async () => {
    const total = result(await list()).total as number;
    const all = await everyRow();
    const last = result(await list({ limit: 1, offset: total - 1 }));
    expect(last.rows).toEqual([all[total - 1]]);
    expect(last.next_cursor).toBeNull();
    expect(result(await list({ offset: 2_000_000_000 }))).toMatchObject({ rows: [], total, next_cursor: null });
  });

  it("refuses a bad cursor with the spec's 400 InputValidationError", async () => {
    const cursor = result(await list({ limit: 1 })).next_cursor as string;
    const badCursors = [
      "not-a-cursor",
      `${cursor}A`,
      // Well formed, but its instant is negative: not one the list gave out.
      Buffer.alloc(24, 0xff).toString("base64url"),
    ];
    for (const bad of badCursors) {
      const reply = await list({ cursor: bad });
      expect(reply.status, bad).toBe(400);
      expect(reply.body).toMatchObject({
        code: "InputValidationError",
        message: expect.any(String),
        input: expect.objectContaining({ cursor: bad }),
        errors: [{ propertyPath: "cursor", invalidValue: bad, message: expect.any(String) }],
      });
    }
    const both = await list({ cursor, offset: 1 });
    expect(both.status).toBe(400);
    expect(both.body).toMatchObject({ code: "InputValidationError", errors: [{ propertyPath: "cursor" }] });
  });
});
