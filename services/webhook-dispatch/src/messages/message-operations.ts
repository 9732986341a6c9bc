import type { EntityManager } from "@mikro-orm/postgresql";
import type { Clock, EnvironmentName } from "@svc/platform";
import { findEndpoint } from "../endpoints/endpoint-operations.ts";
import { refuse } from "../refusal.ts";
import { type Delivery, WebhookMessage } from "./message.entity.ts";

type DeliveryStatus = Delivery["status"];

export interface DeliveryView {
  endpointId: string;
  status: DeliveryStatus;
  attempts: number;
  lastAttemptAt: Date | null;
  nextAttemptAt: Date | null;
  lastStatusCode: number | null;
  lastError: string | null;
  deliveredAt: Date | null;
}

export interface MessageView {
  id: string;
  type: string;
  environment: EnvironmentName | null;
  occurredAt: Date | null;
  receivedAt: Date;
  deliveries: DeliveryView[];
}

export interface MessageQuery {
  organizationId: string;
  /** Only messages with a delivery to this endpoint, and only that delivery. */
  endpointId?: string;
  /** Only messages with a delivery in this status. */
  status?: DeliveryStatus;
  limit?: number;
  offset?: number;
}

type DeliveryRow = {
  message_id: string;
  endpoint_id: string;
  status: DeliveryStatus;
  attempts: number;
  last_attempt_at: string | null;
  next_attempt_at: string | null;
  last_status_code: number | null;
  last_error: string | null;
  delivered_at: string | null;
};

/** Deliveries to agents' callback endpoints are no partner endpoint's: the console lists none of them. */
const partnerDelivery = "d.endpoint_id in (select id from endpoints where agent_id is null)";

/** Newest first, the spec's paging rules: limit 1-100 (default 25), offset from 0. */
export async function listMessages(em: EntityManager, query: MessageQuery): Promise<MessageView[]> {
  const limit = query.limit || 25;
  const offset = query.offset ?? 0;
  if (!Number.isInteger(limit) || limit < 1 || limit > 100)
    throw refuse("invalid_argument", "limit must be from 1 to 100");
  if (!Number.isInteger(offset) || offset < 0) throw refuse("invalid_argument", "offset must be 0 or more");
  if (!query.organizationId) throw refuse("invalid_argument", "organization_id is required");
  if (query.endpointId !== undefined) await findEndpoint(em, query.organizationId, query.endpointId);

  const deliveryConditions: string[] = [partnerDelivery];
  const deliveryParams: unknown[] = [];
  if (query.endpointId !== undefined) {
    deliveryConditions.push("d.endpoint_id = ?");
    deliveryParams.push(query.endpointId);
  }
  if (query.status !== undefined) {
    deliveryConditions.push("d.status = ?");
    deliveryParams.push(query.status);
  }
  const filtered = deliveryConditions.length > 1;
  const where = filtered
    ? `and exists (select 1 from deliveries d where d.message_id = m.id and ${deliveryConditions.join(" and ")})`
    : "";
  const messages = await em.execute<
    {
      id: string;
      type: string;
      environment: MessageView["environment"];
      occurred_at: string | null;
      received_at: string;
    }[]
  >(
    `select m.id, m.type, m.environment, m.occurred_at, m.received_at from messages m
     where m.organization_id = ? ${where}
     order by m.seq desc limit ? offset ?`,
    [query.organizationId, ...deliveryParams, limit, offset],
  );
  if (messages.length === 0) return [];

  const deliveries = await em.execute<DeliveryRow[]>(
    `select d.* from deliveries d where d.message_id in (?) and ${partnerDelivery} ${query.endpointId !== undefined ? "and d.endpoint_id = ?" : ""} order by d.id`,
    [messages.map((m) => m.id), ...(query.endpointId !== undefined ? [query.endpointId] : [])],
  );
  const byMessage = Map.groupBy(deliveries, (d) => d.message_id);
  return messages.map((m) => ({
    id: m.id,
    type: m.type,
    environment: m.environment,
    occurredAt: dateOrNull(m.occurred_at),
    receivedAt: new Date(m.received_at),
    deliveries: (byMessage.get(m.id) ?? []).map(deliveryView),
  }));
}

/**
 * Sends a stored message to one endpoint again: its delivery (created if the endpoint never had
 * one) becomes pending now with a fresh retry schedule, whatever its status was. The webhook-id
 * stays the message's, so a receiver that already processed it recognises it. An attempt running
 * meanwhile no longer writes its result (`schedule_step` fences it): the replay's schedule stands.
 */
export async function replayMessage(
  em: EntityManager,
  clock: Clock,
  input: { organizationId: string; messageId: string; endpointId: string },
): Promise<DeliveryView> {
  const endpoint = await findEndpoint(em, input.organizationId, input.endpointId);
  const message = await em.findOne(WebhookMessage, { id: input.messageId, organizationId: input.organizationId });
  if (!message) throw refuse("not_found", `no message ${input.messageId} in organization ${input.organizationId}`);
  if (endpoint.status !== "enabled")
    throw refuse("failed_precondition", `endpoint ${endpoint.id} is disabled; enable it before replaying to it`);
  if (endpoint.types.length > 0 && !endpoint.types.includes(message.type)) {
    throw refuse(
      "failed_precondition",
      `endpoint ${endpoint.id} does not receive ${message.type} (its filter: ${endpoint.types.join(", ")})`,
    );
  }
  const now = clock.now();
  const [row] = await em.execute<DeliveryRow[]>(
    `insert into deliveries (message_id, endpoint_id, status, attempts, schedule_step, next_attempt_at, created_at)
     values (?, ?, 'pending', 0, 0, ?, ?)
     on conflict (message_id, endpoint_id) do update
       set status = 'pending', schedule_step = 0, next_attempt_at = excluded.next_attempt_at, delivered_at = null
     returning *`,
    [message.id, endpoint.id, now, now],
  );
  if (!row) throw new Error("delivery upsert returned no row");
  return deliveryView(row);
}

function deliveryView(row: DeliveryRow): DeliveryView {
  return {
    endpointId: row.endpoint_id,
    status: row.status,
    attempts: row.attempts,
    lastAttemptAt: dateOrNull(row.last_attempt_at),
    nextAttemptAt: dateOrNull(row.next_attempt_at),
    lastStatusCode: row.last_status_code,
    lastError: row.last_error,
    deliveredAt: dateOrNull(row.delivered_at),
  };
}

const dateOrNull = (value: string | null): Date | null => (value === null ? null : new Date(value));
