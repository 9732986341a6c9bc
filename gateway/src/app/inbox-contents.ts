import { createHash } from "node:crypto";
import { GateType } from "@svc/proto/gate/v1/gate_pb.js";
import { instant } from "../http/instant.ts";
import type { Schema } from "../http/schema.ts";
import type { GatewayServices } from "../services.ts";
import { cardSchema, personCardItem } from "./agent-cards.ts";

/**
 * What the person's inbox holds, read from the services that own each part, in parallel: gate's pending
 * requests naming them, agentlink's queued cards and its notices of new bindings. Account's notices (revoked
 * link, re-link offer) join `notices` here when account serves them. `cursor` is a digest of the whole
 * contents, so a client that passes back the cursor it holds waits for a change.
 */
export async function readInbox(services: GatewayServices, svcUserId: string) {
  const [{ requests }, { cards }, bindingNotices] = await Promise.all([
    services.gate.listPendingRequests({ svcUserId }),
    services.agentlink.listCards({ svcUserId }),
    services.agentlink.listBindingNotices({ svcUserId }),
  ]);
  const names = await services.organizations.organizationNames(requests.map((r) => r.organizationId));
  const contents = {
    requests: requests.map((request) => ({
      request_id: request.requestId,
      // Organizations are never deleted; the fallback only keeps the shape.
      platform: { name: names.get(request.organizationId) ?? "unknown" },
      gate_type: request.gateType === GateType.AGE ? "age" : "human",
      ...(request.ageThreshold !== undefined && { age_threshold: request.ageThreshold }),
      notarize_offered: request.notarizeOffered,
      expires_at: instant(request.expiresAt),
    })),
    cards: cards.map(personCardItem),
    notices: bindingNotices.notices.map((notice) => ({
      notice_id: notice.noticeId,
      kind: "agent_bound",
      agent: { display_name: notice.agent?.displayName ?? "" },
      at: instant(notice.boundAt),
    })),
  };
  return { cursor: digestOf(contents), ...contents };
}

export type Inbox = Awaited<ReturnType<typeof readInbox>>;

const digestOf = (contents: unknown) =>
  createHash("sha256").update(JSON.stringify(contents)).digest("base64url").slice(0, 22);

const platformSchema: Schema = { type: "object", properties: { name: { type: "string" } } };

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
      description: "agent_bound: an agent the person is newly bound to.",
      items: {
        type: "object",
        properties: {
          notice_id: { type: "string" },
          kind: { type: "string", enum: ["agent_bound"] },
          agent: { type: "object", properties: { display_name: { type: "string" } } },
          at: { type: "string", format: "date-time" },
        },
      },
    },
  },
};
