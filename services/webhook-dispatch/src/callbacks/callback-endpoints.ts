import type { Client } from "@connectrpc/connect";
import type { Logger, Queryable } from "@svc/platform";
import type { AgentCallbackService } from "@svc/proto/agentlink/v1/agentlink_pb.js";
import type { SecretBox } from "../endpoints/endpoint-secret.ts";
import type { IncomingMessage } from "../messages/message-store.ts";

/** The agent's callback endpoint: one per agent, its id fixed so its sealed secret's additional data is too. */
export const callbackEndpointId = (agentId: string): string => `cb_${agentId}`;

export interface CallbackEndpoints {
  /**
   * Before resolutions are stored: asks agentlink for each of their agents' callback target and makes the
   * agent's callback endpoint match it (created or updated and enabled with a target, disabled without
   * one). Answers the agents agentlink could not be asked about: their resolutions must wait.
   */
  refresh(messages: readonly IncomingMessage[], now: Date): Promise<Set<string>>;
}

/**
 * agentlink owns the agents, their callback URLs and secrets; this service keeps a copy of each target
 * as an endpoint (the secret sealed again under its own key), refreshed whenever one of the agent's
 * resolutions arrives, so the one delivery engine sends callbacks as it sends webhooks.
 */
export function createCallbackEndpoints(options: {
  agentlink: Pick<Client<typeof AgentCallbackService>, "getCallbackTarget">;
  statements: Queryable;
  box: SecretBox;
  logger: Logger;
}): CallbackEndpoints {
  const { agentlink, statements, box, logger } = options;
  return {
    async refresh(messages, now) {
      const agentIds = [...new Set(messages.flatMap((m) => (m.resolvedCard ? [m.resolvedCard.agentId] : [])))];
      const unreachable = new Set<string>();
      if (agentIds.length === 0) return unreachable;
      const targets: { agentId: string; organizationId: string; url: string; secret: string }[] = [];
      const without: string[] = [];
      await Promise.all(
        agentIds.map((agentId) =>
          agentlink.getCallbackTarget({ agentId }).then(
            ({ target }) => {
              if (target)
                targets.push({
                  agentId,
                  organizationId: target.organizationId,
                  url: target.url,
                  secret: target.secret,
                });
              else without.push(agentId);
            },
            (error: unknown) => {
              logger.warn("could not ask agentlink for an agent's callback target; its resolutions wait", {
                error,
                agentId,
              });
              unreachable.add(agentId);
            },
          ),
        ),
      );
      if (targets.length === 0 && without.length === 0) return unreachable;
      await statements.query({
        name: "refresh_callback_endpoints",
        text: `with upserted as (
           insert into endpoints (id, agent_id, organization_id, url, types, status, secret_version, secret_sealed, created_at)
           select id, agent_id, organization_id, url, '{}', 'enabled', 1, decode(secret_sealed, 'base64'), $1
           from jsonb_to_recordset($2::jsonb) as t(id text, agent_id text, organization_id text, url text, secret_sealed text)
           on conflict (id) do update
           set organization_id = excluded.organization_id, url = excluded.url, secret_sealed = excluded.secret_sealed,
             secret_version = endpoints.secret_version + 1, status = 'enabled', disabled_reason = null, disabled_at = null
         )
         update endpoints set status = 'disabled', disabled_at = $1,
           disabled_reason = 'the agent has no callback target (no callback URL, or revoked)'
         where agent_id = any($3::text[]) and status = 'enabled'`,
        values: [
          now,
          JSON.stringify(
            targets.map((t) => {
              const id = callbackEndpointId(t.agentId);
              return {
                id,
                agent_id: t.agentId,
                organization_id: t.organizationId,
                url: t.url,
                secret_sealed: box.seal(t.secret, id).toString("base64"),
              };
            }),
          ),
          without,
        ],
      });
      return unreachable;
    },
  };
}
