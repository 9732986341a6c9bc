import { Migration } from "@svc/platform";

/**
 * The trace context of the create-verification-link call that wrote a request (W3C traceparent; null while
 * tracing is off), so that the person's confirmation, a later call, continues the request's trace: its
 * attestation and its event join the partner's call.
 */
export class RequestTraceContext extends Migration {
  override up(): void {
    this.addSql(`alter table "requests" add column "trace_context" text null`);
  }
}
