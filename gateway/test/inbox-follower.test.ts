import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { ListNoticesResponseSchema, NoticeKind } from "@svc/proto/account/v1/account_pb.js";
import { ListInboxResponseSchema } from "@svc/proto/agentlink/v1/agentlink_pb.js";
import { type InboxRequest, InboxRequestSchema } from "@svc/proto/common/v1/inbox_watch_pb.js";
import { GateType, ListPendingRequestsResponseSchema, PendingRequestSchema } from "@svc/proto/gate/v1/gate_pb.js";
import { describe, expect, it, vi } from "vitest";
import { readHeldInbox, withRequestEnded, withRequestPending } from "../src/app/inbox-contents.ts";
import { InboxFollower } from "../src/app/inbox-follower.ts";
import { OrganizationNameCache } from "../src/app/organization-names.ts";
import type { InboxChange } from "../src/long-poll/notifications.ts";
import { Waiters } from "../src/long-poll/waiters.ts";
import type { GatewayServices } from "../src/services.ts";

const now = new Date("2026-03-01T12:00:00Z");
const person = "4b0f6a7e-2c51-4d8e-9f3a-7a1e6c0d2b95";
const orgA = "0d5c2f1e-8a47-4b6e-b3c9-2e7f1a9d6c40";
const orgB = "9e3a7c15-5f2d-4c8b-a1e6-6d0b4f8e2a73";
const names = new Map([
  [orgA, "Alpha"],
  [orgB, "Beta"],
]);
const minutes = (n: number) => new Date(now.getTime() + n * 60_000);

/** A pending request as gate tells it (`InboxRequest`) and as gate lists it (`PendingRequest`). */
function request(id: string, organizationId: string, createdAt: Date, age?: number): InboxRequest {
  return create(InboxRequestSchema, {
    requestId: id,
    organizationId,
    ageGate: age !== undefined,
    ageThreshold: age,
    notarizeOffered: age === undefined,
    expiresAt: timestampFromDate(new Date(createdAt.getTime() + 10 * 60_000)),
    createdAt: timestampFromDate(createdAt),
  });
}
const listed = ({ $typeName: _, ageGate, ...fields }: InboxRequest) =>
  create(PendingRequestSchema, { ...fields, gateType: ageGate ? GateType.AGE : GateType.HUMAN });

const r1 = request("11111111-0000-4000-8000-000000000000", orgA, minutes(-5));
const r2 = request("22222222-0000-4000-8000-000000000000", orgB, minutes(-1), 18);
// Created at the same instant as r2, with ids on either side of it: gate orders them by id.
const r2before = request("1aaaaaaa-0000-4000-8000-000000000000", orgA, minutes(-1));
const r2after = request("2bbbbbbb-0000-4000-8000-000000000000", orgB, minutes(-1));
const r3 = request("33333333-0000-4000-8000-000000000000", orgA, now);

/** The services the inbox reads, answering what `pending` holds at each read (cards and notices fixed). */
function servicesWith(pending: { requests: InboxRequest[] }, directoryQueries = vi.fn()) {
  const directory = {
    organizationNames: async (ids: readonly string[]) => {
      directoryQueries(ids);
      return new Map(ids.filter((id) => names.has(id)).map((id) => [id, names.get(id) as string]));
    },
  };
  const listPendingRequests = vi.fn(async () =>
    create(ListPendingRequestsResponseSchema, {
      requests: [...pending.requests]
        .sort(
          (a, b) => Number(a.createdAt?.seconds) - Number(b.createdAt?.seconds) || (a.requestId < b.requestId ? -1 : 1),
        )
        .map(listed),
    }),
  );
  return {
    listPendingRequests,
    services: {
      gate: { listPendingRequests },
      agentlink: {
        listInbox: async () => create(ListInboxResponseSchema, {}),
      },
      account: {
        listNotices: async () =>
          create(ListNoticesResponseSchema, {
            notices: [
              {
                noticeId: "n-1",
                kind: NoticeKind.ACCOUNT_REVOKED,
                organizationId: orgB,
                handle: "h",
                at: timestampFromDate(minutes(-30)),
              },
            ],
          }),
      },
      organizations: new OrganizationNameCache(directory),
      inboxWaiters: new Waiters<InboxChange>(),
      clock: { now: () => now },
    } as unknown as GatewayServices,
  };
}

const read = (requests: InboxRequest[]) => readHeldInbox(servicesWith({ requests }).services, person);
const pendingChange = (r: InboxRequest): InboxChange => ({ case: "requestPending", value: r });
const endedChange = (r: InboxRequest): InboxChange => ({ case: "requestEnded", value: r.requestId });

describe("an inbox change applied without reading", () => {
  it("gives the contents and cursor a read of the same inbox gives, wherever the request sorts", async () => {
    for (const added of [r3, r2before, r2after]) {
      const before = await read([r1, r2]);
      const applied = withRequestPending(before, added, { name: names.get(added.organizationId) as string }, now);
      const after = await read([r1, r2, added]);
      expect(applied?.inbox).toEqual(after.inbox);
      expect(applied?.inbox.cursor).not.toBe(before.inbox.cursor);
    }
    const ended = withRequestEnded(await read([r1, r2, r3]), r2.requestId, now);
    expect(ended?.inbox).toEqual((await read([r1, r3])).inbox);
  });

  it("changes nothing for a request already shown, or one ended that is not shown", async () => {
    const held = await read([r1, r2]);
    expect(withRequestPending(held, r2, { name: "Beta" }, now)?.inbox).toEqual(held.inbox);
    expect(withRequestEnded(held, r3.requestId, now)?.inbox).toEqual(held.inbox);
  });

  it("leaves out requests whose window ended, as gate's list does", async () => {
    const held = await read([r1, r2]);
    const later = new Date(r1.expiresAt ? Number(r1.expiresAt.seconds) * 1000 : 0);
    expect(withRequestEnded(held, r3.requestId, later)?.inbox).toEqual((await read([r2])).inbox);
  });

  it("hashes only the new item for the cursor, not the whole inbox again", async () => {
    const held = await read([r1, r2]);
    const stringify = vi.spyOn(JSON, "stringify");
    try {
      const ended = withRequestEnded(held, r1.requestId, now);
      expect(stringify).not.toHaveBeenCalled();
      withRequestPending(ended ?? held, r3, { name: "Alpha" }, now);
      expect(stringify.mock.calls.map(([value]) => value)).toEqual([
        expect.objectContaining({ request_id: r3.requestId }),
      ]);
    } finally {
      stringify.mockRestore();
    }
  });

  it("asks for a read when the inbox holds gate's bound of 100 requests", async () => {
    const many = Array.from({ length: 100 }, (_, i) =>
      request(`${String(i).padStart(8, "0")}-0000-4000-8000-000000000000`, orgA, minutes(-2)),
    );
    const held = await read(many);
    expect(withRequestPending(held, r3, { name: "Alpha" }, now)).toBeUndefined();
    expect(withRequestEnded(held, many[0]?.requestId ?? "", now)).toBeUndefined();
  });
});

describe("a held inbox following InboxChanged", () => {
  it("applies told changes in order without reading gate again, and names partners from the cache", async () => {
    const pending = { requests: [r1] };
    const directoryQueries = vi.fn();
    const { services, listPendingRequests } = servicesWith(pending, directoryQueries);
    const follower = new InboxFollower(services, person);
    await follower.inbox();
    expect(listPendingRequests).toHaveBeenCalledTimes(1);
    expect(directoryQueries).toHaveBeenCalledTimes(1);

    pending.requests = [r1, r3];
    services.inboxWaiters.wake(person, pendingChange(r3));
    await follower.nextChange();
    const woken = await follower.inbox();
    expect(woken).toEqual(await readInbox(services));
    expect(listPendingRequests).toHaveBeenCalledTimes(2); // the line above, not the wake
    expect(directoryQueries).toHaveBeenCalledTimes(1);

    // Told twice, then ended, then (late) told pending again: gone, and stays gone.
    pending.requests = [r1];
    for (const change of [pendingChange(r3), endedChange(r3), pendingChange(r3)])
      services.inboxWaiters.wake(person, change);
    expect(await follower.inbox()).toEqual(await readInbox(services));
    follower.stop();
  });

  it("reads again at a wake that tells nothing, dropping the changes heard before that read", async () => {
    const pending = { requests: [r1] };
    const { services, listPendingRequests } = servicesWith(pending);
    const follower = new InboxFollower(services, person);
    await follower.inbox();
    // r3 was created and has ended again by the time of the read the bare wake asks for; its "ended" is not heard yet.
    services.inboxWaiters.wake(person, pendingChange(r3));
    services.inboxWaiters.wake(person);
    const inbox = await follower.inbox();
    expect(listPendingRequests).toHaveBeenCalledTimes(2);
    expect(inbox.requests.map((r) => r.request_id)).toEqual([r1.requestId]);
    follower.stop();
    expect(services.inboxWaiters.size).toBe(0);
  });
});

async function readInbox(services: GatewayServices) {
  return (await readHeldInbox(services, person)).inbox;
}

describe("the organization name cache", () => {
  it("asks the directory once per organization within its time, and again after it", async () => {
    let clock = 0;
    const organizationNames = vi.fn(async (ids: readonly string[]) => new Map(ids.map((id) => [id, `name ${id}`])));
    const cache = new OrganizationNameCache({ organizationNames }, { ttlMs: 1000, max: 2, now: () => clock });
    expect(await cache.organizationNames(["a", "b"])).toEqual(
      new Map([
        ["a", "name a"],
        ["b", "name b"],
      ]),
    );
    expect(await cache.organizationNames(["a"])).toEqual(new Map([["a", "name a"]]));
    expect(organizationNames).toHaveBeenCalledTimes(1);
    await cache.organizationNames(["c"]); // over the bound: the oldest, a, is forgotten
    await cache.organizationNames(["b", "a"]);
    expect(organizationNames).toHaveBeenLastCalledWith(["a"]);
    clock = 1001;
    await cache.organizationNames(["c"]);
    expect(organizationNames).toHaveBeenLastCalledWith(["c"]);
  });
});

describe("partner names on a told change", () => {
  /** A directory that answers the first `answered` queries and leaves every later one waiting for ever. */
  const stallingDirectory = (answered: number) => {
    const queries = vi.fn();
    return {
      queries,
      organizationNames: (ids: readonly string[]) => {
        queries(ids);
        if (queries.mock.calls.length > answered) return new Promise<Map<string, string>>(() => {});
        return Promise.resolve(new Map(ids.map((id) => [id, names.get(id) ?? id])));
      },
    };
  };

  it("applies a change of an organization warmed before it without waiting for the directory", async () => {
    // The first read names the notice's partner (one query), the warm asks for orgA (two); any later one stalls.
    const directory = stallingDirectory(2);
    const { services } = servicesWith({ requests: [] });
    services.organizations = new OrganizationNameCache(directory);
    const follower = new InboxFollower(services, person);
    await follower.inbox(); // nothing pending and no notice of orgA: its name is not asked
    services.organizations.warm(r3.organizationId);
    services.organizations.warm(r3.organizationId);
    await vi.waitFor(() => expect(services.organizations.cachedName(r3.organizationId)).toBe("Alpha"));
    expect(directory.queries).toHaveBeenCalledTimes(2);
    services.inboxWaiters.wake(person, pendingChange(r3));
    const woken = await follower.inbox();
    expect(woken.requests.map((r) => [r.request_id, r.platform.name])).toEqual([[r3.requestId, "Alpha"]]);
    follower.stop();
  });

  it("answers a name past its time at once and refreshes it in the background, once", async () => {
    let clock = 0;
    const directory = stallingDirectory(1);
    const cache = new OrganizationNameCache(directory, { ttlMs: 1000, now: () => clock });
    expect(await cache.organizationNames([orgA])).toEqual(new Map([[orgA, "Alpha"]]));
    clock = 1001;
    // The refresh stalls for ever: the stale name is still answered, synchronously and through the read.
    expect(cache.cachedName(orgA)).toBe("Alpha");
    expect(await cache.organizationNames([orgA])).toEqual(new Map([[orgA, "Alpha"]]));
    expect(cache.cachedName(orgA)).toBe("Alpha");
    expect(directory.queries).toHaveBeenCalledTimes(2);
    expect(cache.cachedName(orgB)).toBeUndefined();
  });
});
