import type { Queryable } from "@svc/platform";
import type { Agent } from "../agents/agent.entity.ts";
import type { Card } from "./card.entity.ts";

/** What inquire answers with: the card as the agent and the sandbox humans see it. */
export type ProposedCard = Pick<Card, "id" | "status" | "svcUserId" | "ttlAt">;

/** Everything inquire reads before it decides, as of one snapshot. */
export interface InquiryFacts {
  /** The calling agent; undefined when it is unknown. */
  agent: Pick<Agent, "id" | "name" | "organizationId" | "environment" | "status" | "categories"> | undefined;
  /** The agent's card for this request_id, if any (the idempotency key). */
  existing: ProposedCard | undefined;
  /** The person of the agent's active binding with this opaque_id lookup; undefined when none, or none was asked for. */
  boundPerson: string | undefined;
}

interface Row {
  name: string;
  organization_id: string;
  environment: Agent["environment"];
  status: Agent["status"];
  categories: string[];
  card_id: string | null;
  card_status: Card["status"] | null;
  card_svc_user_id: string | null;
  card_ttl_at: Date | null;
  bound_svc_user_id: string | null;
}

// One round trip for the three look-ups; each is one index probe (the agent's key, the card's
// (agent_id, request_id), the binding's (agent_id, opaque_id_lookup)).
const statement = {
  name: "inquiry_facts",
  text: `select a.name, a.organization_id, a.environment, a.status, a.categories,
      c.id as card_id, c.status as card_status, c.svc_user_id as card_svc_user_id, c.ttl_at as card_ttl_at,
      b.svc_user_id as bound_svc_user_id
    from agent a
    left join card c on c.agent_id = a.id and c.request_id = $2::uuid
    left join lateral (
      select svc_user_id from binding
        where agent_id = a.id and opaque_id_lookup = $3 and unbound_at is null limit 1) b on true
    where a.id = $1::uuid`,
};

const uuidForm = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * The agent, the agent's card for `requestId` and, when `opaqueIdLookup` is given, the person it is
 * bound to. An id that is not a uuid names nothing (the trust layer refuses such a request_id later).
 */
export async function inquiryFacts(
  db: Queryable,
  agentId: string,
  requestId: string,
  opaqueIdLookup: string | undefined,
): Promise<InquiryFacts> {
  if (!uuidForm.test(agentId)) return { agent: undefined, existing: undefined, boundPerson: undefined };
  const { rows } = await db.query<Row>({
    ...statement,
    values: [agentId, uuidForm.test(requestId) ? requestId : null, opaqueIdLookup ?? null],
  });
  const row = rows[0];
  if (!row) return { agent: undefined, existing: undefined, boundPerson: undefined };
  return {
    agent: {
      id: agentId,
      name: row.name,
      organizationId: row.organization_id,
      environment: row.environment,
      status: row.status,
      categories: row.categories,
    },
    existing:
      row.card_id === null || row.card_status === null || row.card_svc_user_id === null || row.card_ttl_at === null
        ? undefined
        : { id: row.card_id, status: row.card_status, svcUserId: row.card_svc_user_id, ttlAt: row.card_ttl_at },
    boundPerson: row.bound_svc_user_id ?? undefined,
  };
}
