import { Migration } from "@svc/platform";

/**
 * The trace context of the create-verification-link call that wrote a request (W3C traceparent; null while
 * tracing is off), so that the person's confirm or decline, a later call, and the sweep's expiry continue the
 * request's trace: its signing call and its event join the creating call's.
 */
export class RequestTraceContext extends Migration {
  override up(): void {
    this.addSql(`alter table "requests" add column "trace_context" text null`);
  }
}
