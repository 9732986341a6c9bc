import { type EnvironmentName, type Queryable, randomBase62, type StoredTraceContext } from "@svc/platform";
import type { ResolvedCard } from "../callbacks/resolved-card.ts";
import {
  type ClaimedDelivery,
  type ClaimedRow,
  type ClaimTerms,
  claimedDelivery,
  heldSql,
  leaseEndSql,
  termsValues,
} from "../delivery/delivery-store.ts";

export interface IncomingMessage {
  organizationId: string;
  dedupKey: string;
  type: string;
  environment: EnvironmentName | null;
  occurredAt: Date | null;
  body: Buffer;
  /** An agents_ask resolution: it also goes to the agent's callback endpoint, if the agent has one. */
  resolvedCard: ResolvedCard | null;
  /** The trace of the event's consumer span, which the deliveries continue; a parked event has none. */
  traceContext?: StoredTraceContext;
}

const newMessageId = (): string => `msg_${randomBase62(24)}`;

export interface StoreResult {
  /** Deliveries created, claimed or not. */
  created: number;
  /** New deliveries claimed for the worker's first attempt in the same statement. */
  claimed: ClaimedDelivery[];
}

/**
 * Stores a batch of events as messages and fans each new one out to every enabled endpoint of its
 * organization whose filter takes its type, and a resolution also to its agent's callback endpoint
 * (refreshed just before, see callback-endpoints.ts), in one statement. A dedup key seen before (the producer
 * re-published, or the stream redelivered after a crash) adds neither a message nor a delivery.
 *
 * When the first attempt is immediate, the same statement claims the new deliveries the worker has
 * room for (`claim`), so they go out without waiting for a claim of their own; the others are
 * pending and due at `firstAttemptAt`.
 */
export async function storeMessages(
  db: Queryable,
  messages: readonly IncomingMessage[],
  options: { firstAttemptAt: Date; claim: ClaimTerms },
): Promise<StoreResult> {
  const unique = uniqueByDedupKey(messages);
  if (unique.length === 0) return { created: 0, claimed: [] };
  const bodies = new Map<string, Buffer>();
  const traces = new Map<string, StoredTraceContext>();
  const rows = unique.map((m) => {
    const id = newMessageId();
    bodies.set(id, m.body);
    traces.set(id, m.traceContext ?? null);
    return {
      id,
      organization_id: m.organizationId,
      dedup_key: m.dedupKey,
      type: m.type,
      environment: m.environment,
      occurred_at: m.occurredAt?.toISOString() ?? null,
      body: m.body.toString("base64"),
      agent_id: m.resolvedCard?.agentId ?? null,
      card_id: m.resolvedCard?.cardId ?? null,
      trace_context: m.traceContext ?? null,
    };
  });
  // The rows travel as one JSON parameter, one array of objects rather than an array per column.
  // The new deliveries are matched to their endpoint by primary key, never back to a CTE: the planner
  // cannot estimate a CTE's rows and would compare every delivery with every target.
  const { rows: created } = await db.query<Omit<ClaimedRow, "body" | "trace_context"> & { claimed: boolean }>({
    name: "store_messages",
    text: `with stored as (
       insert into messages (id, organization_id, dedup_key, type, environment, occurred_at, body, received_at, agent_id, card_id,
         trace_context)
       select id, organization_id, dedup_key, type, environment, occurred_at, decode(body, 'base64'), $1, agent_id, card_id,
         trace_context
       from jsonb_to_recordset($8::jsonb)
         as t(id text, organization_id text, dedup_key text, type text, environment text, occurred_at timestamptz, body text,
           agent_id text, card_id text, trace_context text)
       on conflict (dedup_key) do nothing
       returning id, seq, organization_id, type, agent_id
     ), targets as (
       select e.message_id, e.id as endpoint_id, ${heldSql} + row_number() over (partition by e.id order by e.seq) - 1 as ahead
       from (
         select s.id as message_id, s.seq, p.id
         from stored s
         join endpoints p on p.organization_id = s.organization_id and p.status = 'enabled' and p.agent_id is null
           and (cardinality(p.types) = 0 or s.type = any(p.types))
         union all
         -- The agent's callback endpoint exists (and is enabled) only while agentlink names a target.
         select s.id, s.seq, c.id
         from stored s
         join endpoints c on c.agent_id = s.agent_id and c.status = 'enabled'
       ) e
     ), fanned_out as (
       insert into deliveries (message_id, endpoint_id, status, attempts, schedule_step, next_attempt_at, claimed_by, created_at)
       select message_id, endpoint_id, 'pending', claimed::int, claimed::int, case when claimed then ${leaseEndSql} else $9 end,
         case when claimed then $7::uuid end, $1
       from (select *, ahead < $2::int as claimed from targets) t
       returning id, message_id, endpoint_id, attempts, schedule_step, next_attempt_at
     )
     select f.attempts = 1 as claimed, f.id, f.attempts, f.schedule_step, f.next_attempt_at as lease_until, f.message_id, f.endpoint_id,
       e.url, e.secret_version, e.secret_sealed, e.previous_secret_sealed, e.previous_secret_expires_at
     from fanned_out f join endpoints e on e.id = f.endpoint_id`,
    values: [...termsValues(options.claim), JSON.stringify(rows), options.firstAttemptAt],
  });
  return {
    created: created.length,
    claimed: created
      .filter((row) => row.claimed)
      .map((row) => {
        const body = bodies.get(row.message_id);
        if (!body)
          throw new Error(`store_messages claimed a delivery of ${row.message_id}, a message not in the batch`);
        return claimedDelivery({ ...row, body, trace_context: traces.get(row.message_id) ?? null });
      }),
  };
}

function uniqueByDedupKey(messages: readonly IncomingMessage[]): IncomingMessage[] {
  const seen = new Set<string>();
  return messages.filter((m) => !seen.has(m.dedupKey) && seen.add(m.dedupKey));
}
