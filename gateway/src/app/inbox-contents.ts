import { createHash } from "node:crypto";
import { NoticeKind } from "@svc/proto/account/v1/account_pb.js";
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

/**
 * What the person's inbox holds, read from the services that own each part, in parallel: gate's pending
 * requests naming them, agentlink's queued cards and its notices of new bindings, account's notices of
 * their links (a partner's revoke, an offer to re-link). Partners are named by their organization's name,
 * looked up once. Notices are newest first, whoever owns them. `cursor` is a digest of the whole contents,
 * so a client that passes back the cursor it holds waits for a change.
 */
export async function readInbox(services: GatewayServices, svcUserId: string) {
  const [{ requests }, { cards }, bindingNotices, accountNotices] = await Promise.all([
    services.gate.listPendingRequests({ svcUserId }),
    services.agentlink.listCards({ svcUserId }),
    services.agentlink.listBindingNotices({ svcUserId }),
    services.account.listNotices({ svcUserId }),
  ]);
  const platformOf = await platformsOf(services, [
    ...requests.map((r) => r.organizationId),
    ...accountNotices.notices.map((n) => n.organizationId),
  ]);
  const notices = [
    ...accountNotices.notices.map((notice) => ({
      notice_id: notice.noticeId,
      kind: accountNoticeKinds[notice.kind] ?? "account_revoked",
      platform: platformOf(notice.organizationId),
      at: instant(notice.at),
      handle: notice.handle,
    })),
    ...bindingNotices.notices.map((notice) => ({
      notice_id: notice.noticeId,
      kind: "agent_bound" as const,
      agent: { display_name: notice.agent?.displayName ?? "" },
      at: instant(notice.boundAt),
    })),
  ].sort((a, b) => (b.at ?? "").localeCompare(a.at ?? ""));
  const contents = {
    requests: requests.map((request) => ({
      request_id: request.requestId,
      platform: platformOf(request.organizationId),
      gate_type: request.gateType === GateType.AGE ? "age" : "human",
      ...(request.ageThreshold !== undefined && { age_threshold: request.ageThreshold }),
      notarize_offered: request.notarizeOffered,
      expires_at: instant(request.expiresAt),
    })),
    cards: cards.map(personCardItem),
    notices,
  };
  return { cursor: digestOf(contents), ...contents };
}

export type Inbox = Awaited<ReturnType<typeof readInbox>>;

const digestOf = (contents: unknown) =>
  createHash("sha256").update(JSON.stringify(contents)).digest("base64url").slice(0, 22);

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
