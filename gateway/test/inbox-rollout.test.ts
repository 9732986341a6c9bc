import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import { createInternalClient, type RunningService, serveConnect } from "@svc/platform";
import { ListNoticesResponseSchema } from "@svc/proto/account/v1/account_pb.js";
import {
  AgentService,
  BindingNoticeSchema,
  CardStatus,
  PersonCardSchema,
} from "@svc/proto/agentlink/v1/agentlink_pb.js";
import { ListPendingRequestsResponseSchema } from "@svc/proto/gate/v1/gate_pb.js";
import { afterEach, describe, expect, it } from "vitest";
import { readInbox } from "../src/app/inbox-contents.ts";
import type { GatewayServices } from "../src/services.ts";
import { memoryLogger } from "./memory-logger.ts";

/**
 * The inbox read meeting agentlinks of two releases, over real Connect on h2c: this release answers ListInbox;
 * the previous one, met while a rollout has updated the gateway first, does not know it, and answers its
 * cards and binding notices as two calls.
 */
const person = "4b0f6a7e-2c51-4d8e-9f3a-7a1e6c0d2b95";
const agent = { agentId: "a-1", displayName: "Inbox Bot" };
const card = create(PersonCardSchema, {
  cardId: "7d1c2a4e-0000-4000-8000-000000000001",
  requestId: "r-1",
  agent,
  card: { summary_title: "Pay invoice 2231 to Acme", category: "payments" },
  cardDigest: "digest",
  ttlAt: timestampFromDate(new Date("2026-11-30T12:10:00Z")),
  proposedAt: timestampFromDate(new Date("2026-11-30T12:00:00Z")),
  status: CardStatus.QUEUED,
});
const notice = create(BindingNoticeSchema, {
  noticeId: "n-1",
  agent,
  boundAt: timestampFromDate(new Date("2026-11-30T11:00:00Z")),
});

let agentlink: RunningService | undefined;
afterEach(async () => {
  await agentlink?.stop();
  agentlink = undefined;
});

/** An agentlink serving `methods` (the others answer `unimplemented`), and the methods it was asked, in order. */
async function agentlinkServing(methods: Partial<ServiceImpl<typeof AgentService>>) {
  const asked: string[] = [];
  const recorded = Object.fromEntries(
    Object.entries(methods).map(([name, handler]) => [
      name,
      (...args: never[]) => {
        asked.push(name);
        return (handler as (...a: never[]) => unknown)(...args);
      },
    ]),
  );
  agentlink = await serveConnect({
    name: "agentlink-test",
    host: "127.0.0.1",
    port: 0,
    logger: memoryLogger(),
    routes: (router) => router.service(AgentService, recorded),
    ready: async () => {},
    onStop: async () => {},
  });
  const services = {
    gate: { listPendingRequests: async () => create(ListPendingRequestsResponseSchema, {}) },
    agentlink: createInternalClient(AgentService, agentlink.url),
    account: { listNotices: async () => create(ListNoticesResponseSchema, {}) },
    organizations: { organizationNames: async () => new Map() },
  } as unknown as GatewayServices;
  return { services, asked };
}

describe("the inbox's agentlink part across a rollout", () => {
  it("is one ListInbox call to this release's agentlink", async () => {
    const { services, asked } = await agentlinkServing({
      listInbox: () => ({ cards: [card], notices: [notice] }),
    });
    const inbox = await readInbox(services, person);
    expect(inbox.cards.map((c) => c.card_id)).toEqual([card.cardId]);
    expect(inbox.notices).toMatchObject([
      { notice_id: "n-1", kind: "agent_bound", agent: { display_name: "Inbox Bot" } },
    ]);
    expect(asked).toEqual(["listInbox"]);
  });

  it("reads the same inbox from the previous release's agentlink, which answers ListInbox unimplemented", async () => {
    const current = await agentlinkServing({ listInbox: () => ({ cards: [card], notices: [notice] }) });
    const expected = await readInbox(current.services, person);
    await agentlink?.stop();
    const previous = await agentlinkServing({
      listCards: () => ({ cards: [card] }),
      listBindingNotices: () => ({ notices: [notice] }),
    });
    expect(await readInbox(previous.services, person)).toEqual(expected);
    expect([...previous.asked].sort()).toEqual(["listBindingNotices", "listCards"]);
  });

  it("does not hide another failure of ListInbox behind the old reads", async () => {
    const { services, asked } = await agentlinkServing({
      listInbox: () => {
        throw new ConnectError("database unreachable", Code.Unavailable);
      },
      listCards: () => ({ cards: [card] }),
      listBindingNotices: () => ({ notices: [notice] }),
    });
    await expect(readInbox(services, person)).rejects.toMatchObject({ code: Code.Unavailable });
    expect(asked).toEqual(["listInbox"]);
  });
});
