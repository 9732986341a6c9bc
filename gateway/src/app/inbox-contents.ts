import { createHash } from "node:crypto";
import { type Timestamp, timestampDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import { type ListNoticesResponse, NoticeKind } from "@svc/proto/account/v1/account_pb.js";
import type { BindingNotice, PersonCard } from "@svc/proto/agentlink/v1/agentlink_pb.js";
import type { InboxRequest } from "@svc/proto/common/v1/inbox_watch_pb.js";
import { GateType } from "@svc/proto/gate/v1/gate_pb.js";
import { instant } from "../http/instant.ts";
import type { Schema } from "../http/schema.ts";
import type { GatewayServices } from "../services.ts";
import { cardSchema, personCardItem } from "./agent-cards.ts";
import { platformSchema, platformsOf } from "./platforms.ts";

const accountNoticeKinds: Partial<Record<NoticeKind, "account_revoked" | "relink_offer">> = {
  [NoticeKind.ACCOUNT_REVOKED]: "account_revoked",
  [NoticeKind.RELINK_OFFER]: "relink_offer",
};

/** How many pending requests gate's ListPendingRequests answers at most (oldest first). */
const requestsBound = 100;

/** A pending request as the inbox shows it, from gate's list or from an `InboxChanged` that tells one. */
type RequestFacts = {
  requestId: string;
  ageThreshold?: number;
  notarizeOffered: boolean;
  expiresAt?: Timestamp;
} & ({ gateType: GateType } | { ageGate: boolean });

const requestItem = (request: RequestFacts, platform: { name: string }) => ({
  request_id: request.requestId,
  platform,
  gate_type: ("gateType" in request ? request.gateType === GateType.AGE : request.ageGate) ? "age" : "human",
  ...(request.ageThreshold !== undefined && { age_threshold: request.ageThreshold }),
  notarize_offered: request.notarizeOffered,
  expires_at: instant(request.expiresAt),
});

type Contents = {
  requests: ReturnType<typeof requestItem>[];
  cards: ReturnType<typeof personCardItem>[];
  notices: ReturnType<typeof noticeItems>;
};

/** The answer: the contents with their cursor, a digest of the whole, so a client that passes it back waits for a change. */
const inboxOf = (contents: Contents) => ({ cursor: digestOf(contents), ...contents });

export type Inbox = ReturnType<typeof inboxOf>;

/**
 * An inbox as last answered, with what a told change needs to be applied exactly: where each request
 * sorts (gate lists them by created_at, then request_id).
 */
export interface HeldInbox {
  inbox: Inbox;
  createdAt: ReadonlyMap<string, number>;
}

/**
 * What the person's inbox holds, read from the services that own each part, in parallel: gate's pending
 * requests naming them, agentlink's queued cards and its notices of new bindings (one call), account's notices of
 * their links (a partner's revoke, an offer to re-link). Partners are named by their organization's name,
 * looked up once. Notices are newest first, whoever owns them.
 */
export async function readInbox(services: GatewayServices, svcUserId: string): Promise<Inbox> {
  return (await readHeldInbox(services, svcUserId)).inbox;
}

export async function readHeldInbox(services: GatewayServices, svcUserId: string): Promise<HeldInbox> {
  const [{ requests }, { cards, notices: bindingNotices }, accountNotices] = await Promise.all([
    services.gate.listPendingRequests({ svcUserId }),
    agentlinkInbox(services, svcUserId),
    services.account.listNotices({ svcUserId }),
  ]);
  const platformOf = await platformsOf(services, [
    ...requests.map((r) => r.organizationId),
    ...accountNotices.notices.map((n) => n.organizationId),
  ]);
  return {
    inbox: inboxOf({
      requests: requests.map((request) => requestItem(request, platformOf(request.organizationId))),
      cards: cards.map(personCardItem),
      notices: noticeItems(accountNotices, bindingNotices, platformOf),
    }),
    createdAt: new Map(requests.map((r) => [r.requestId, timestampMs(r.createdAt)])),
  };
}

/**
 * agentlink's part: its cards and binding notices in one call. An agentlink of the previous release, met while a
 * rollout has updated the gateway first, answers ListInbox `unimplemented`; it is then asked the two reads that
 * release answers. Dropped in the release after, with ListBindingNotices (proto/README.md, "Removing an RPC").
 */
async function agentlinkInbox(
  services: GatewayServices,
  svcUserId: string,
): Promise<{ cards: PersonCard[]; notices: BindingNotice[] }> {
  try {
    return await services.agentlink.listInbox({ svcUserId });
  } catch (error) {
    if (ConnectError.from(error).code !== Code.Unimplemented) throw error;
    const [{ cards }, { notices }] = await Promise.all([
      services.agentlink.listCards({ svcUserId }),
      services.agentlink.listBindingNotices({ svcUserId }),
    ]);
    return { cards, notices };
  }
}

function noticeItems(
  accountNotices: ListNoticesResponse,
  bindingNotices: readonly BindingNotice[],
  platformOf: (organizationId: string) => { name: string },
) {
  return [
    ...accountNotices.notices.map((notice) => ({
      notice_id: notice.noticeId,
      kind: accountNoticeKinds[notice.kind] ?? "account_revoked",
      platform: platformOf(notice.organizationId),
      at: instant(notice.at),
      handle: notice.handle,
    })),
    ...bindingNotices.map((notice) => ({
      notice_id: notice.noticeId,
      kind: "agent_bound" as const,
      agent: { display_name: notice.agent?.displayName ?? "" },
      at: instant(notice.boundAt),
    })),
  ].sort((a, b) => (b.at ?? "").localeCompare(a.at ?? ""));
}

/**
 * The held inbox with a request gate told was created pending, placed where gate's list puts it, and
 * without the requests whose window has ended by `now` (gate's list leaves them out before its sweep
 * ends them): the same contents, and so the same cursor, a read would answer. A request already shown
 * changes nothing. Undefined when a read is needed to know: the inbox holds gate's bound of requests.
 */
export function withRequestPending(
  held: HeldInbox,
  request: InboxRequest,
  platform: { name: string },
  now: Date,
): HeldInbox | undefined {
  if (held.inbox.requests.length >= requestsBound) return undefined;
  if (held.createdAt.has(request.requestId)) return withoutEnded(held, undefined, now);
  const createdAt = new Map(held.createdAt).set(request.requestId, timestampMs(request.createdAt));
  // request_id breaks ties as Postgres orders uuids: by their bytes, which is the order of their lower-case text.
  const sortsAfter = (requestId: string) =>
    (createdAt.get(requestId) ?? 0) - timestampMs(request.createdAt) || (requestId > request.requestId ? 1 : -1);
  const requests = [...held.inbox.requests];
  const at = requests.findIndex((item) => sortsAfter(item.request_id) > 0);
  requests.splice(at === -1 ? requests.length : at, 0, requestItem(request, platform));
  return withoutEnded({ inbox: { ...held.inbox, requests }, createdAt }, undefined, now);
}

/** The held inbox without a request gate told left pending (one it does not show changes nothing), as `withRequestPending`. */
export function withRequestEnded(held: HeldInbox, requestId: string, now: Date): HeldInbox | undefined {
  if (held.inbox.requests.length >= requestsBound) return undefined;
  return withoutEnded(held, requestId, now);
}

function withoutEnded(held: HeldInbox, endedId: string | undefined, now: Date): HeldInbox {
  const requests = held.inbox.requests.filter(
    (item) => item.request_id !== endedId && Date.parse(item.expires_at ?? "") > now.getTime(),
  );
  const { cards, notices } = held.inbox;
  return {
    inbox: inboxOf({ requests, cards, notices }),
    createdAt: new Map([...held.createdAt].filter(([requestId]) => requests.some((r) => r.request_id === requestId))),
  };
}

const timestampMs = (at: Timestamp | undefined) => (at ? timestampDate(at).getTime() : 0);

/**
 * Each item's digest, kept with the item itself: a told change keeps every other item of the held inbox
 * as it was (items are never changed after they are made), so its new cursor hashes one new item's JSON
 * and the others' digests, not the whole inbox again (queued cards can be tens of kilobytes each).
 */
const itemDigests = new WeakMap<object, string>();

function itemDigest(item: object): string {
  let digest = itemDigests.get(item);
  if (digest === undefined) {
    digest = createHash("sha256").update(JSON.stringify(item)).digest("base64url");
    itemDigests.set(item, digest);
  }
  return digest;
}

/** The cursor: a digest of the item digests, section by section (a digest is 43 characters, so "," and ";" separate unambiguously). */
function digestOf(contents: Contents): string {
  const hash = createHash("sha256");
  for (const items of [contents.requests, contents.cards, contents.notices]) {
    for (const item of items) hash.update(`${itemDigest(item)},`);
    hash.update(";");
  }
  return hash.digest("base64url").slice(0, 22);
}

export const inboxSchema: Schema = {
  type: "object",
  properties: {
    cursor: {
      type: "string",
      description: "A digest of what the inbox holds: pass it back to wait for a change.",
    },
    requests: {
      type: "array",
      description: "Pending gate requests naming the person, oldest first: open one with /app/requests/open.",
      items: {
        type: "object",
        properties: {
          request_id: { type: "string" },
          platform: platformSchema,
          gate_type: { type: "string", enum: ["human", "age"] },
          age_threshold: { type: "integer", description: "Age gates only." },
          notarize_offered: { type: "boolean" },
          expires_at: { type: "string", format: "date-time" },
        },
      },
    },
    cards: { type: "array", description: "Queued cards, as GET /agentlink/cards lists them.", items: cardSchema },
    notices: {
      type: "array",
      description:
        "Newest first. account_revoked: a partner revoked a secured account; relink_offer: a partner revoked one after a changed sign-in detail and offers re-linking (both with platform and handle, at = when the link ended). agent_bound: an agent the person is newly bound to (with agent, at = when bound). Dismiss one with POST /app/notices/dismiss.",
      items: {
        type: "object",
        properties: {
          notice_id: { type: "string" },
          kind: { type: "string", enum: ["account_revoked", "relink_offer", "agent_bound"] },
          platform: { ...platformSchema, description: "account_revoked and relink_offer only." },
          handle: { type: "string", description: "account_revoked and relink_offer only: the link's handle." },
          agent: {
            type: "object",
            properties: { display_name: { type: "string" } },
            description: "agent_bound only.",
          },
          at: { type: "string", format: "date-time" },
        },
      },
    },
  },
};
