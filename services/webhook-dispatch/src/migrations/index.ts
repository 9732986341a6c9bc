import { CreateWebhookTables } from "./0001-webhook-tables.ts";
import { CreateParkedEvents } from "./0002-parked-events.ts";
import { AddAgentCallbacks } from "./0003-agent-callbacks.ts";
import { DispatcherInstances } from "./0004-dispatcher-instances.ts";
import { MessageRetention } from "./0005-message-retention.ts";
import { MessageTraceContext } from "./0006-message-trace-context.ts";

/** Applied in order at start; a migration, once released, is never edited (add a new one). */
export const migrations = [
  { name: "0001_webhook_tables", class: CreateWebhookTables },
  { name: "0002_parked_events", class: CreateParkedEvents },
  { name: "0003_agent_callbacks", class: AddAgentCallbacks },
  { name: "0004_dispatcher_instances", class: DispatcherInstances },
  { name: "0005_message_retention", class: MessageRetention },
  { name: "0006_message_trace_context", class: MessageTraceContext },
];
