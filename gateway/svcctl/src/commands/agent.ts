import { type EnvironmentName, environmentProto } from "@svc/platform";
import { type Agent, AgentConsoleService, AgentStatus } from "@svc/proto/agentlink/v1/agentlink_pb.js";
import { type CommandGroup, stringList, stringValue, UsageError } from "../command.ts";
import { cardStatusName, environmentName, instant } from "./format.ts";

const agentId = { type: "string", required: true, valueName: "ID", description: "the agent's id" } as const;

/** An agent as svcctl prints it: never a key or a secret (the service returns none). */
const agentRow = (agent: Agent | undefined) =>
  agent && {
    agent_id: agent.agentId,
    organization_id: agent.organizationId,
    environment: environmentName(agent.environment),
    name: agent.name,
    display_name: agent.displayName,
    avatar_asset: agent.avatarAsset ?? null,
    categories: agent.categories,
    callback_url: agent.callbackUrl ?? null,
    status: agent.status === AgentStatus.REVOKED ? "revoked" : "active",
    created_at: instant(agent.createdAt),
    revoked_at: instant(agent.revokedAt),
  };

export const agentCommands: CommandGroup = {
  name: "agent",
  summary:
    "Agents Ask agents: registration, their keys, revocation; console sandbox proposals, the expire sweep and a card's audit log.",
  commands: [
    {
      name: "register",
      summary: 'Registers an agent; prints {"agent_id","agent_key","callback_secret"?}.',
      details:
        "The agent key (svc_agent_<Name>__<secret>) and, with --callback-url, the whsec_ secret its callbacks are " +
        "signed with are shown this once: only a hash of the key and a sealed copy of the secret are kept. The name is " +
        "3-40 letters, digits, _ or -, unique in the organization and environment.",
      options: {
        org: { type: "string", required: true, valueName: "ID", description: "organization id" },
        env: {
          type: "string",
          required: true,
          choices: ["development", "production"],
          description: "environment of the agent",
        },
        name: { type: "string", required: true, valueName: "NAME", description: "the agent's name (in its keys)" },
        "display-name": { type: "string", valueName: "D", description: "name shown to people (default: the name)" },
        category: {
          type: "string",
          required: true,
          multiple: true,
          valueName: "C",
          description: "an action category the agent may propose",
        },
        "callback-url": { type: "string", valueName: "URL", description: "where resolutions are POSTed" },
      },
      async run(values, ctx) {
        const callbackUrl = stringValue(values, "callback-url");
        const response = await ctx.serviceConsole(AgentConsoleService).registerAgent({
          organizationId: values.org as string,
          environment: environmentProto(values.env as EnvironmentName),
          name: values.name as string,
          displayName: stringValue(values, "display-name") ?? "",
          categories: stringList(values, "category"),
          ...(callbackUrl !== undefined && { callbackUrl }),
        });
        return {
          agent_id: response.agent?.agentId,
          agent_key: response.agentKey,
          ...(response.callbackSecret !== undefined && { callback_secret: response.callbackSecret }),
        };
      },
    },
    {
      name: "list",
      summary: 'Lists the organization\'s agents; prints {"agents":[…]} without keys or secrets.',
      options: { org: { type: "string", required: true, valueName: "ID", description: "organization id" } },
      async run(values, ctx) {
        const { agents } = await ctx
          .serviceConsole(AgentConsoleService)
          .listAgents({ organizationId: values.org as string });
        return { agents: agents.map(agentRow) };
      },
    },
    {
      name: "revoke",
      summary: "Revokes an agent: every key of it is refused; prints the agent.",
      details:
        "agentlink refuses the agent's keys at once, and every gateway forgets its cached answers for them when " +
        "agentlink's CredentialChanged reaches it; one that cannot read NATS may accept a key until its answer " +
        "expires (GATEWAY_AGENT_KEY_CACHE_TTL, at most 5 seconds).",
      options: { "agent-id": agentId },
      async run(values, ctx) {
        const response = await ctx
          .serviceConsole(AgentConsoleService)
          .revokeAgent({ agentId: values["agent-id"] as string });
        return agentRow(response.agent);
      },
    },
    {
      name: "rotate-key",
      summary: 'Issues a new agent key; prints {"agent_id","agent_key","previous_keys_expire_at"}.',
      details:
        "The new key is shown this once. The agent's older keys keep working until previous_keys_expire_at (24 hours " +
        "by default, AGENTLINK_KEY_OVERLAP), then are refused.",
      options: { "agent-id": agentId },
      async run(values, ctx) {
        const response = await ctx
          .serviceConsole(AgentConsoleService)
          .rotateAgentKey({ agentId: values["agent-id"] as string });
        return {
          agent_id: response.agentId,
          agent_key: response.agentKey,
          previous_keys_expire_at: instant(response.previousKeysExpireAt),
        };
      },
    },
    {
      name: "sweep",
      summary: 'Runs the expire sweep now; prints {"expired_count"}.',
      details:
        "Queued cards past their ttl_at become expired, each with a card.expired audit row and an " +
        "agents_ask.resolution.expired event. agentlink also sweeps by itself about every 60 seconds.",
      options: {
        limit: { type: "string", valueName: "N", description: "at most this many cards, 1-1000 (default 200)" },
      },
      async run(values, ctx) {
        const raw = values.limit;
        if (raw !== undefined && !/^\d{1,4}$/.test(String(raw)))
          throw new UsageError(`--limit must be a whole number from 1 to 1000, not ${JSON.stringify(raw)}`);
        const response = await ctx
          .serviceConsole(AgentConsoleService)
          .expire(raw === undefined ? {} : { limit: Number(raw) });
        return { expired_count: response.expiredCount };
      },
    },
    {
      name: "propose",
      summary:
        'Development only: proposes a card as the agent would, to a sandbox human bound to it; prints {"card_id","request_id","agent_id","status","ttl_at"}.',
      details:
        "The card goes through inquire's own checks and trust layer (refusals as inquire's: the category among the " +
        "agent's, ttl_seconds 60-86400, the screened title and detail), under a fresh request_id; the sandbox human " +
        "answers it as it answers any card, so the partner's webhooks see agents_ask.card.proposed, with " +
        'source "console_sandbox", and then the resolution. Bind the human first (svcctl human claim). Refused in a ' +
        "production deployment, for an unknown agent or human, and for a human that is not a sandbox human or not bound " +
        "to the agent.",
      options: {
        agent: { type: "string", required: true, valueName: "NAME", description: "the development agent's name" },
        org: {
          type: "string",
          valueName: "ID",
          description:
            "the agent's organization (needed only when several organizations' agents of that name are bound to the human)",
        },
        human: {
          type: "string",
          required: true,
          valueName: "SANDBOX_HUMAN",
          description: "the sandbox human's svc_user_id",
        },
        title: { type: "string", required: true, valueName: "T", description: "summary_title, 1-120 characters" },
        category: { type: "string", required: true, valueName: "C", description: "one of the agent's categories" },
        "detail-label": { type: "string", valueName: "L", description: "summary_detail.label, 1-40 characters" },
        "detail-value": { type: "string", valueName: "V", description: "summary_detail.value, 1-80 characters" },
        "ttl-seconds": { type: "string", valueName: "N", description: "60-86400 (default 600)" },
      },
      async run(values, ctx) {
        const label = stringValue(values, "detail-label");
        const value = stringValue(values, "detail-value");
        if ((label === undefined) !== (value === undefined))
          throw new UsageError("--detail-label and --detail-value go together: give both or neither");
        const ttl = stringValue(values, "ttl-seconds");
        if (ttl !== undefined && !/^\d{1,9}$/.test(ttl))
          throw new UsageError(`--ttl-seconds must be a whole number of seconds, not ${JSON.stringify(ttl)}`);
        const organizationId = stringValue(values, "org");
        const proposed = await ctx.serviceConsole(AgentConsoleService).proposeSandboxCard({
          agentName: values.agent as string,
          ...(organizationId !== undefined && { organizationId }),
          svcUserId: values.human as string,
          proposal: {
            action: {
              summary_title: values.title as string,
              category: values.category as string,
              ...(label !== undefined && value !== undefined && { summary_detail: { label, value } }),
            },
          },
          ...(ttl !== undefined && { ttlSeconds: Number(ttl) }),
        });
        return {
          card_id: proposed.cardId,
          request_id: proposed.requestId,
          agent_id: proposed.agentId,
          status: cardStatusName(proposed.status),
          ttl_at: instant(proposed.ttlAt),
        };
      },
    },
    {
      name: "audit",
      summary: 'Prints a card\'s audit log: {"card_id","agent_id","request_id","status","entries":[…]}.',
      details:
        "Every state change of the card, oldest first, each with its action (card.proposed, card.cancelled, " +
        "card.expired, …), its actor (agent:<agent_id>, human:<svc_user_id> or sweep), when, and its detail (a " +
        "cancel's reason, the trust layer's warnings) or null. status is the card's as agents read it: a queued " +
        "card past ttl_at is expired before the sweep writes its card.expired entry.",
      options: { "card-id": { type: "string", required: true, valueName: "ID", description: "the card's id" } },
      async run(values, ctx) {
        const audit = await ctx
          .serviceConsole(AgentConsoleService)
          .getCardAudit({ cardId: values["card-id"] as string });
        return {
          card_id: audit.cardId,
          agent_id: audit.agentId,
          request_id: audit.requestId,
          status: cardStatusName(audit.status),
          entries: audit.entries.map((entry) => ({
            action: entry.action,
            actor: entry.actor,
            at: instant(entry.at),
            detail: entry.detail ?? null,
          })),
        };
      },
    },
  ],
};
