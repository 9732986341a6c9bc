import type { Agent } from "@svc/proto/agentlink/v1/agentlink_pb.js";
import type { Schema } from "../http/schema.ts";

/** How the person's side shows an agent: who is asking, never its keys, categories or callback. */
export const agentSummary = (agent: Agent | undefined) =>
  agent && {
    id: agent.agentId,
    name: agent.name,
    display_name: agent.displayName,
    avatar_asset: agent.avatarAsset ?? null,
  };

export const agentSummarySchema: Schema = {
  type: "object",
  properties: {
    id: { type: "string", format: "uuid" },
    name: { type: "string" },
    display_name: { type: "string" },
    avatar_asset: { type: "string", nullable: true },
  },
};
