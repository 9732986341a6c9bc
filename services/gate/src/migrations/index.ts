import { CreateGateTables } from "./0001-gate-tables.ts";
import { CreateRequestFunction } from "./0002-create-request-function.ts";
import { CreateRequestsInBatches } from "./0003-create-requests-in-batches.ts";
import { ConfirmationHold } from "./0004-confirmation-hold.ts";
import { PendingRequestsByPerson } from "./0005-pending-requests-by-person.ts";
import { IdempotentCreates } from "./0006-idempotent-creates.ts";
import { RequestRetention } from "./0007-request-retention.ts";
import { SandboxAnswers } from "./0008-sandbox-answers.ts";
import { RequestTraceContext } from "./0009-request-trace-context.ts";

/** Applied in order at start; a released migration is never edited (add a new one). */
export const migrations = [
  { name: "0001_gate_tables", class: CreateGateTables },
  { name: "0002_create_request_function", class: CreateRequestFunction },
  { name: "0003_create_requests_in_batches", class: CreateRequestsInBatches },
  { name: "0004_confirmation_hold", class: ConfirmationHold },
  { name: "0005_pending_requests_by_person", class: PendingRequestsByPerson },
  { name: "0006_idempotent_creates", class: IdempotentCreates },
  { name: "0007_request_retention", class: RequestRetention },
  { name: "0008_sandbox_answers", class: SandboxAnswers },
  { name: "0009_request_trace_context", class: RequestTraceContext },
];
